#!/usr/bin/python3
"""python/rocecap_consumer.py and rocecap_tap.py against a fake rocecapd producer.

The real producer (rocecapd) is C++; this test builds the same shared memory by hand from the
contract in consumer/client/rocecap_consumer.hpp (memfds for the control memory, header slab and
payload slab, reopened read-only before they are passed), serves the consumer socket protocol in
a thread, and publishes frames step by step from the main thread, so each race the client must
survive (a torn slot, a lapped log) is produced deterministically. One short run with a writer
thread checks that no torn bytes come back when the races are not staged.

When the C++ header compiles, the layout the client assumes (ABI_OFFSETS) is compared with
offsetof() from it, so the two cannot drift apart unnoticed. A header that does not compile is
a warning only, unless ROCECAP_ABI_STRICT=1; ROCECAP_CONSUMER_HEADER names another header.

usage: /usr/bin/python3 python_fake_producer_test.py   (exit 0 pass, 1 fail, 77 numpy missing)
"""

import fcntl
import mmap
import os
import queue
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is missing (Debian: python3-numpy; run with /usr/bin/python3)")
    sys.exit(77)
import rocecap_consumer as rc  # noqa: E402

TAP = os.path.join(REPO, "python", "rocecap_tap.py")
HEADER = os.environ.get("ROCECAP_CONSUMER_HEADER",
                        os.path.join(REPO, "consumer", "client", "rocecap_consumer.hpp"))

FAILURES = []


def check(condition, what):
    """Records a failed expectation (and goes on, so one run shows every failure)."""
    if not condition:
        FAILURES.append(what)
        print(f"FAIL: {what}")
    return condition


def wait_for(predicate, seconds=2.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.002)
    return predicate()


# ---------------------------------------------------------------------------------------------
# The fake producer: memory laid out as rocecapd lays it out, written as rocecapd writes it
# ---------------------------------------------------------------------------------------------
CONTROL_FIXED = struct.Struct("<QIIIIQQQQIIQQQ")  # magic .. control_bytes
WRITE_POS_AT, STATE_AT, FRAME_INDEX_BASE_AT = 128, 136, 144
DESCRIPTOR_FIXED = struct.Struct("<QQqQIHHIIIIQ")  # seq .. retention_pos; header[64] at 64
DESCRIPTOR_HEADER_AT = 64
FORMATS = {"codif": 0, "udp": 1, "vdif": 2}


def round_up(value, to):
    return (value + to - 1) // to * to


class FakeStream:
    """One stream's control memory and slabs, owned read-write by the 'producer'."""

    DATA0_OFF = 16  # where frame data starts inside a header slot (any offset is allowed)
    DATA1_OFF = 8   # and inside a payload slot

    def __init__(self, index, name, fmt="codif", slots=8, log_capacity=8, header_stride=128,
                 payload_stride=1024, payload_memory="host", frame_index_base=0):
        self.index, self.name, self.format = index, name, fmt
        self.payload_memory = payload_memory
        self.slots, self.cap = slots, log_capacity
        self.header_stride, self.payload_stride = header_stride, payload_stride
        self.generations_offset = round_up(256, 64)
        self.log_offset = round_up(self.generations_offset + 8 * slots, 64)
        self.control_bytes = self.log_offset + 128 * log_capacity
        self.header_slab_bytes = slots * header_stride
        self.payload_slab_bytes = slots * payload_stride
        self.fds, self.maps = [], []
        sizes = [("control", self.control_bytes), ("header", self.header_slab_bytes)]
        if payload_memory == "host":
            sizes.append(("payload", self.payload_slab_bytes))
        for what, size in sizes:
            fd = os.memfd_create(f"fake-{what}-{index}", os.MFD_CLOEXEC)
            os.ftruncate(fd, size)
            self.fds.append(fd)
            self.maps.append(mmap.mmap(fd, size, flags=mmap.MAP_SHARED,
                                       prot=mmap.PROT_READ | mmap.PROT_WRITE))
        self.control, self.header_slab = self.maps[0], self.maps[1]
        self.payload_slab = self.maps[2] if payload_memory == "host" else None
        CONTROL_FIXED.pack_into(
            self.control, 0, 0x31534E4F43504352, 1, 256, slots, log_capacity, header_stride,
            payload_stride, self.header_slab_bytes, self.payload_slab_bytes,
            0 if payload_memory == "host" else 1, FORMATS[fmt], self.generations_offset,
            self.log_offset, self.control_bytes)
        struct.pack_into("<Q", self.control, FRAME_INDEX_BASE_AT, frame_index_base)
        self.write_pos = 0
        self.next_slot = 0

    def read_only_fds(self):
        """What rocecapd passes: the same memory reopened O_RDONLY (mmap PROT_WRITE refused)."""
        return [os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC) for fd in self.fds]

    def generation(self, slot):
        return struct.unpack_from("<Q", self.control, self.generations_offset + 8 * slot)[0]

    def set_generation(self, slot, value):
        struct.pack_into("<Q", self.control, self.generations_offset + 8 * slot, value)

    def tear(self, slot):
        """The writer reuses a slot: its generation moves on before new data goes in."""
        self.set_generation(slot, self.generation(slot) + 1)

    def _descriptor(self, frame_index, timestamp_ns, generation, slot, flags, header,
                    data0_off, data0_len, data1_off, data1_len, retention_pos):
        position = self.write_pos
        at = self.log_offset + (position % self.cap) * 128
        struct.pack_into("<Q", self.control, at, rc.WRITING)  # seq first: being written
        DESCRIPTOR_FIXED.pack_into(self.control, at, rc.WRITING, frame_index, timestamp_ns,
                                   generation, slot, flags, len(header), data0_off, data0_len,
                                   data1_off, data1_len, retention_pos)
        self.control[at + DESCRIPTOR_HEADER_AT:at + DESCRIPTOR_HEADER_AT + 64] = \
            header.ljust(64, b"\0")
        struct.pack_into("<Q", self.control, at, position)  # seq last: published
        self.write_pos = position + 1
        struct.pack_into("<Q", self.control, WRITE_POS_AT, self.write_pos)
        return position

    def publish(self, frame_index, header, data0, data1, flags=0, retention_pos=0,
                stale=False):
        """Publishes a frame in the next slot; returns (position, slot, raw bytes expected).

        stale: the descriptor carries the slot's previous generation, as if the slot had been
        reused between publishing and reading (a reader must call it torn).
        """
        slot = self.next_slot
        self.next_slot = (slot + 1) % self.slots
        self.tear(slot)  # reuse: new generation before the data changes
        base0 = slot * self.header_stride + self.DATA0_OFF
        self.header_slab[base0:base0 + len(data0)] = data0
        if self.payload_slab is not None:
            base1 = slot * self.payload_stride + self.DATA1_OFF
            self.payload_slab[base1:base1 + len(data1)] = data1
        generation = self.generation(slot) - (1 if stale else 0)
        position = self._descriptor(frame_index, 1_700_000_000_000_000_000 + frame_index,
                                    generation, slot, flags, header, self.DATA0_OFF,
                                    len(data0), self.DATA1_OFF, len(data1), retention_pos)
        return position, slot, header + data0 + data1

    def publish_fill(self, frame_index, header, size):
        position = self._descriptor(frame_index, 0, 0, rc.NO_SLOT,
                                    rc.FLAG_FILL | rc.FLAG_INVALID, header, 0, 0, 0, size, 0)
        return position, rc.NO_SLOT, header + bytes(size)

    def end(self):
        struct.pack_into("<I", self.control, STATE_AT, 1)

    def close(self):
        for m in self.maps:
            m.close()
        for fd in self.fds:
            os.close(fd)


def codif_header(frame_index, fill=False):
    """A recognisable 64-byte header (not a real CODIF one: the client never parses it)."""
    return struct.pack("<QQ", frame_index, 0xC0D1F) + bytes([0x80 if fill else 0]) * 48


def payload(frame_index, size):
    return bytes((frame_index * 7 + i) & 0xFF for i in range(size))


class FakeServer:
    """rocecapd's consumer socket, one connection at a time, in a thread."""

    def __init__(self, path, streams, refuse=None, hold_frames=64, hold_ms=500):
        self.path, self.streams, self.refuse = path, streams, refuse
        self.hold_frames, self.hold_ms = hold_frames, hold_ms
        self.hellos = []
        self.acks = queue.Queue()
        self.detach_reason = None
        self.stopping = False
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(path)
        self.listener.listen(4)
        self.listener.settimeout(0.05)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _select(self, selection):
        if selection == "all":
            return list(self.streams)
        names = selection.split(",")
        return [s for s in self.streams
                if s.name in names or s.name.split("@")[0] in names]

    def _serve(self):
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            with conn:
                try:
                    self._conversation(conn)
                except OSError:
                    pass  # the client hung up early (the raw fd test does): next one

    def _conversation(self, conn):
        hello = conn.recv(4096).decode("ascii")
        self.hellos.append(hello)
        fields = dict(t.split("=", 1) for t in hello.split()[1:])
        chosen = self._select(fields.get("streams", ""))
        if self.refuse or not chosen:
            conn.send(f"error {self.refuse or 'no stream matches ' + fields['streams']}"
                      .encode())
            return
        for s in chosen:
            text = (f"stream index={s.index} name={s.name} format={s.format} "
                    f"payload_memory={s.payload_memory}")
            if s.payload_memory == "gpu":
                text += " cuda_ipc=" + "ab" * 64 + " gpu_device=0"
            fds = s.read_only_fds()
            try:
                socket.send_fds(conn, [text.encode()], fds)
            finally:
                for fd in fds:
                    os.close(fd)
        conn.send(f"ready streams={len(chosen)} mode={fields['mode']} "
                  f"hold_frames={self.hold_frames} hold_ms={self.hold_ms}".encode())
        conn.settimeout(0.01)
        while not self.stopping:
            if self.detach_reason is not None:
                conn.send(f"detached {self.detach_reason}".encode())
                self.detach_reason = None
                return
            try:
                message = conn.recv(4096)
            except socket.timeout:
                continue
            if not message:
                return
            self.acks.put(message.decode("ascii"))

    def detach(self, reason):
        self.detach_reason = reason

    def latest_ack(self, seconds=1.0):
        """The last ack message that arrived within `seconds` (None if none did)."""
        last = None
        deadline = time.monotonic() + seconds
        while True:
            try:
                last = self.acks.get(timeout=0.02)
                while True:
                    last = self.acks.get_nowait()
            except queue.Empty:
                if last is not None or time.monotonic() > deadline:
                    return last

    def stop(self):
        self.stopping = True
        self.thread.join(timeout=2)
        self.listener.close()


# ---------------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------------
def expect_frame(event, raw, stream, what):
    """event must be a Frame whose validated copy is `raw`; returns it (or None)."""
    if not check(isinstance(event, rc.Frame), f"{what}: expected a Frame, got {event!r}"):
        return None
    copy = stream.frame_bytes(event)
    check(copy == raw, f"{what}: frame_bytes differ from what was published "
                       f"({len(copy or b'')} vs {len(raw)} bytes)")
    return event


def test_handshake_and_frames(server, producer, gpu_producer, path):
    with rc.Client(path, streams=["ant01"], name="pytest") as client:
        check(server.hellos[-1] == "hello version=1 mode=lossy streams=ant01 name=pytest",
              f"hello message: {server.hellos[-1]!r}")
        check([s.name for s in client.streams] == [producer.name, gpu_producer.name],
              f"antenna selection gave {[s.name for s in client.streams]}")
        stream, gpu = client.streams
        check((stream.index, stream.format, stream.payload_memory) == (0, "codif", "host"),
              f"host stream attributes {stream!r}")
        check((gpu.index, gpu.format, gpu.payload_memory, gpu.gpu_device) ==
              (1, "vdif", "gpu", 0) and gpu.cuda_ipc == "ab" * 64, f"gpu stream {gpu!r}")
        check(client.hold_frames == 64 and client.hold_ms == 500, "ready fields")
        check(stream.next() is None, "next() before anything is published must be None")

        # Plain frames: data split between the slabs, data only in the payload slot, a fill.
        _, _, raw100 = producer.publish(100, codif_header(100), payload(1, 16), payload(100, 256),
                                        flags=rc.FLAG_HW_TIMESTAMP)
        _, _, raw101 = producer.publish(101, codif_header(101), b"", payload(101, 256))
        _, _, raw102 = producer.publish_fill(102, codif_header(102, fill=True), 256)
        f100 = expect_frame(stream.next(), raw100, stream, "frame 100")
        if f100:
            check(f100.frame_index == 100 and f100.position == 0 and not f100.fill
                  and f100.flags == rc.FLAG_HW_TIMESTAMP
                  and f100.timestamp_ns == 1_700_000_000_000_000_100, f"frame 100: {f100!r}")
            check(f100.header == codif_header(100), "frame 100 header")
            arrays = f100.data_arrays()
            check(len(arrays) == 2 and arrays[0].tobytes() == payload(1, 16)
                  and arrays[1].tobytes() == payload(100, 256), "frame 100 data_arrays")
            try:
                f100.data
                check(False, "Frame.data of split data must raise ValueError")
            except ValueError:
                pass
            check(stream.still_valid(f100), "frame 100 still valid")
        f101 = expect_frame(stream.next(), raw101, stream, "frame 101")
        if f101:
            check(f101.data.tobytes() == payload(101, 256), "frame 101 zero-copy data")
            samples = f101.samples(np.int16)
            check(np.array_equal(samples, np.frombuffer(payload(101, 256), dtype="<i2")),
                  "frame 101 samples(int16)")
            check_read_only(f101.data, "frame 101 data")
            check_read_only(samples, "frame 101 samples")
            check(samples.base is not None and not samples.flags.owndata,
                  "samples() must be a view, not a copy")
        f102 = expect_frame(stream.next(), raw102, stream, "fill frame 102")
        if f102:
            check(f102.fill and f102.flags & rc.FLAG_INVALID and f102.size == 64 + 256,
                  f"fill frame: {f102!r}")
            check(not f102.samples(np.int16).any() and len(f102.samples(np.int16)) == 128,
                  "fill samples are zeros")
            check_read_only(f102.data, "fill data")
        check(stream.next() is None, "nothing more after 3 frames")
        check((stream.frames_read, stream.frames_missed) == (3, 0), "counters after 3 frames")

        # Torn before next(): the slot was reused after the descriptor was published.
        _, slot, _ = producer.publish(103, codif_header(103), b"", payload(103, 256))
        producer.tear(slot)
        event = stream.next()
        check(event == rc.Missed(103, 1), f"torn frame 103: expected Missed(103, 1), got {event!r}")
        # Stale from the start (published with the previous generation).
        producer.publish(104, codif_header(104), b"", payload(104, 256), stale=True)
        event = stream.next()
        check(event == rc.Missed(104, 1), f"stale frame 104: got {event!r}")
        _, _, raw105 = producer.publish(105, codif_header(105), b"", payload(105, 256))
        expect_frame(stream.next(), raw105, stream, "frame 105 after torn ones")

        # Torn after next(): the zero-copy view outlived the slot.
        _, slot, _ = producer.publish(106, codif_header(106), b"", payload(106, 256))
        f106 = stream.next()
        check(isinstance(f106, rc.Frame) and stream.still_valid(f106), "frame 106 read")
        producer.tear(slot)
        check(not stream.still_valid(f106), "still_valid after the slot was reused")
        check(stream.frame_bytes(f106) is None, "frame_bytes of a torn frame must be None")
        check(stream.frame_bytes(f106) is None, "frame_bytes of a torn frame, again")
        check((stream.frames_read, stream.frames_missed) == (4, 3),
              f"counters after torn frames: read={stream.frames_read} "
              f"missed={stream.frames_missed}")

        # Wrap-around: 20 frames published while the reader sleeps; the log holds 8.
        raws = {}
        for i in range(107, 127):
            raws[i] = producer.publish(i, codif_header(i), b"", payload(i, 256))[2]
        position = stream.position
        event = stream.next()
        resume = producer.write_pos - producer.cap + 1
        check(event == rc.Missed(107, resume - position),
              f"lapped reader: expected Missed(107, {resume - position}), got {event!r}")
        first_kept = 107 + (resume - position)
        for i in range(first_kept, 127):
            expect_frame(stream.next(), raws[i], stream, f"frame {i} after the wrap")
        check(stream.next() is None, "nothing more after the wrap")
        check(stream.position == producer.write_pos, "position caught up with write_pos")
        check(stream.frames_read + stream.frames_missed == stream.position,
              "every position counted read or missed")

        # GPU payload: data1 is not mapped, its place is given.
        _, slot, _ = gpu_producer.publish(7, b"V" * 32, b"", b"\0" * 512)
        g = gpu.next()
        if check(isinstance(g, rc.Frame), f"gpu frame: {g!r}"):
            check(g.header == b"V" * 32 and g.data1_len == 512
                  and g.data1_offset == slot * gpu_producer.payload_stride + 8,
                  f"gpu frame fields {g.data1_offset} {g.data1_len}")
            try:
                gpu.frame_bytes(g)
                check(False, "frame_bytes of GPU data must raise ValueError")
            except ValueError:
                pass

        # Report: one ack line per stream.
        check(client.report(), "report() while connected")
        ack = server.latest_ack()
        expected = (f"ack 0 {stream.position} {stream.frames_read} {stream.frames_missed} 0\n"
                    f"ack 1 1 1 0 0\n")
        check(ack == expected, f"ack lines: {ack!r}, expected {expected!r}")

        # The end of the run.
        producer.end()
        check(isinstance(stream.next(), rc.Ended), "Ended after the last frame")
        check(isinstance(stream.next(), rc.Ended), "Ended again")

        # The client's own mappings are read-only too.
        try:
            stream._control[0:1] = b"x"
            check(False, "writing the control mapping must fail")
        except TypeError:
            pass


def check_read_only(array, what):
    check(not array.flags.writeable, f"{what}: numpy array is writeable")
    try:
        array[0] = 1
        check(False, f"{what}: writing an element did not raise")
    except (ValueError, IndexError):
        pass
    try:
        array.flags.writeable = True
        check(False, f"{what}: could be made writeable")
    except ValueError:
        pass


def test_slot_reuse_inside_log(server, path):
    """More log entries than slots: old descriptors point at reused slots and read torn."""
    producer = server.streams[2]
    with rc.Client(path, streams=[producer.name]) as client:
        stream = client.streams[0]
        raws = [producer.publish(i, codif_header(i), b"", payload(i, 64))[2] for i in range(6)]
        events = [stream.next() for _ in range(6)]
        check(events[0] == rc.Missed(0, 1) and events[1] == rc.Missed(1, 1),
              f"frames 0 and 1 (slots reused by 4 and 5) must be missed: {events[:2]}")
        for i in range(2, 6):
            expect_frame(events[i], raws[i], stream, f"slot-reuse frame {i}")
        check(stream.next() is None, "slot-reuse: nothing more")


def test_hold_and_detach(server, path):
    producer = server.streams[3]
    with rc.Client(path, streams=[producer.name], mode="hold", name="holder") as client:
        check(server.hellos[-1].startswith("hello version=1 mode=hold "), "hold hello")
        stream = client.streams[0]
        producer.publish(0, codif_header(0), b"", payload(0, 64), retention_pos=41)
        producer.publish_fill(1, codif_header(1, True), 64)
        for _ in range(2):
            frame = stream.next()
            stream.done_with(frame)
        check(stream.ack_position == 42, f"ack position {stream.ack_position}, expected 42")
        client.report()
        ack = server.latest_ack()
        check(ack == "ack 3 2 2 0 42\n", f"hold ack line {ack!r}")
        server.detach("hold bound passed (hold_frames=64)")
        check(wait_for(lambda: not client.report()), "report() must turn False after detached")
        check(client.detach_reason == "hold bound passed (hold_frames=64)",
              f"detach reason {client.detach_reason!r}")
        check(not client.connected, "connected after detach")


def test_error(server, path):
    try:
        rc.Client(path, streams=["ant99"])
        check(False, "a refused hello must raise")
    except rc.ConsumerError as e:
        check(e.text == "no stream matches ant99", f"error text {e.text!r}")
    server.refuse = "consumers are disabled in this run"
    try:
        rc.Client(path)
        check(False, "a refused hello must raise")
    except rc.ConsumerError as e:
        check(e.text == "consumers are disabled in this run" and str(e) == e.text,
              f"error text {e.text!r}")
    finally:
        server.refuse = None


def test_passed_fds_are_read_only(path):
    """What a consumer receives cannot be mapped for writing (the contract's promise)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
        sock.settimeout(2)
        sock.connect(path)
        sock.send(b"hello version=1 mode=lossy streams=ant01@239.17.0.1:36001 name=raw")
        _, fds, _, _ = socket.recv_fds(sock, 4096, 8)
        try:
            check(len(fds) == 3, f"host stream came with {len(fds)} fds")
            for fd in fds:
                check(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY,
                      "passed fd is not O_RDONLY")
                try:
                    mmap.mmap(fd, os.fstat(fd).st_size, flags=mmap.MAP_SHARED,
                              prot=mmap.PROT_READ | mmap.PROT_WRITE)
                    check(False, "mmap PROT_WRITE of a passed fd must be refused")
                except PermissionError:
                    pass
        finally:
            for fd in fds:
                os.close(fd)


def test_concurrent_writer(server, path):
    """A writer thread reusing 4 slots as fast as it can: no torn bytes may come back."""
    producer = server.streams[4]
    total = 3000
    with rc.Client(path, streams=[producer.name]) as client:
        stream = client.streams[0]
        done = threading.Event()

        def write():
            for i in range(total):
                producer.publish(i, codif_header(i), payload(i, 8), payload(i, 120))
                if i % 3 == 0:
                    time.sleep(0)  # let the reader in now and then: a mix of outcomes
            producer.end()
            done.set()

        old_interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        returned, bad, expect = 0, 0, 0
        deadline = time.monotonic() + 10
        try:
            while time.monotonic() < deadline:
                event = stream.next()
                if isinstance(event, rc.Ended):
                    break
                if isinstance(event, rc.Missed):
                    if event.first_index != expect:
                        bad += 1
                    expect = event.first_index + event.count
                elif isinstance(event, rc.Frame):
                    copy = stream.frame_bytes(event)
                    if event.frame_index != expect:
                        bad += 1
                    expect = event.frame_index + 1
                    if copy is None:
                        continue
                    returned += 1
                    i = event.frame_index
                    if copy != codif_header(i) + payload(i, 8) + payload(i, 120):
                        bad += 1
        finally:
            sys.setswitchinterval(old_interval)
            writer.join(timeout=5)
        check(done.is_set(), "concurrent writer finished")
        check(bad == 0, f"concurrent: {bad} frames with wrong bytes or index")
        check(returned > 0, "concurrent: no frame came through at all")
        check(stream.frames_read + stream.frames_missed == total,
              f"concurrent: read {stream.frames_read} + missed {stream.frames_missed} "
              f"!= {total}")
        print(f"concurrent writer: {total} frames, {returned} returned, "
              f"{stream.frames_missed} missed")


def run_tap(path, args, publish, timeout=15):
    """Runs rocecap_tap.py; `publish` is called once the tap has mapped its stream."""
    proc = subprocess.Popen([sys.executable, TAP, "--socket", path] + args,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        publish()
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        check(False, f"tap {args} did not finish: {err}")
    return proc.returncode, err


def test_tap(server, path, work):
    producer = server.streams[5]

    def wait_until_mapped():
        # The tap reports as soon as it idles; its first ack means it read write_pos.
        while not server.acks.empty():
            server.acks.get_nowait()
        check(server.latest_ack(seconds=5) is not None, "the tap never reported")

    out = os.path.join(work, "tap.raw")
    expected = []

    def publish_all():
        wait_until_mapped()
        frame_index = 500
        for i in range(5):
            expected.append(producer.publish(frame_index, codif_header(frame_index), b"",
                                             payload(frame_index, 200))[2])
            frame_index += 1
        expected.append(producer.publish_fill(frame_index, codif_header(frame_index, True),
                                              200)[2])
        frame_index += 1
        producer.publish(frame_index, codif_header(frame_index), b"", payload(1, 200),
                         stale=True)  # torn: must not be written, counted missed
        frame_index += 1
        expected.append(producer.publish(frame_index, codif_header(frame_index), b"",
                                         payload(frame_index, 200))[2])
        producer.end()

    rc_, err = run_tap(path, ["--stream", producer.name, "--out", out, "--timeout", "10"],
                       publish_all)
    check(rc_ == 2, f"tap with a torn frame: exit {rc_}, expected 2; stderr {err!r}")
    check("frames=7 missed=1 fill=1" in err, f"tap summary: {err!r}")
    with open(out, "rb") as f:
        check(f.read() == b"".join(expected), "tap output differs from the published frames")

    # --frames N stops early with exit 0; the stream is the one ended above, so a fresh one.
    producer2 = server.streams[6]
    expected2 = []

    def publish_some():
        wait_until_mapped()
        for i in range(5):
            expected2.append(producer2.publish(i, codif_header(i), payload(i, 16),
                                               payload(i, 100))[2])

    out2 = os.path.join(work, "tap2.raw")
    rc_, err = run_tap(path, ["--stream", producer2.name, "--out", out2, "--frames", "3",
                              "--mode", "hold"], publish_some)
    check(rc_ == 0, f"tap --frames 3: exit {rc_}; stderr {err!r}")
    check("frames=3 missed=0 fill=0" in err, f"tap --frames summary: {err!r}")
    with open(out2, "rb") as f:
        check(f.read() == b"".join(expected2[:3]), "tap --frames output")

    # Errors name the socket and exit 1.
    missing = os.path.join(work, "no-such.sock")
    rc_, err = run_tap(missing, ["--stream", "x", "--out", out2], lambda: None)
    check(rc_ == 1 and missing in err, f"tap on a missing socket: exit {rc_}, {err!r}")
    rc_, err = run_tap(path, ["--stream", "ant99", "--out", out2], lambda: None)
    check(rc_ == 1 and path in err and "no stream matches ant99" in err,
          f"tap refused: exit {rc_}, {err!r}")
    rc_, err = run_tap(path, ["--stream", "ant01", "--out", out2], lambda: None)
    check(rc_ == 1 and "selects 2 streams" in err, f"tap on an antenna: exit {rc_}, {err!r}")


def test_abi_against_header(work):
    """Compares ABI_OFFSETS with offsetof() from the C++ header, when a compiler and a
    compilable header are at hand (the header is rocecapd's half of the contract)."""
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        print("NOTE: no C++ compiler: ABI_OFFSETS not compared with the header")
        return
    lines = [f'  std::printf("{key} %zu\\n", offsetof(rocecap::consumer::abi::{key.split(".")[0]},'
             f' {key.split(".")[1]}));' for key in rc.ABI_OFFSETS]
    source = os.path.join(work, "abi.cpp")
    with open(source, "w") as f:
        f.write(f'#include "{HEADER}"\n#include <cstddef>\n#include <cstdio>\nint main() {{\n'
                '  std::printf("sizeof.ControlHeader %zu\\n", '
                'sizeof(rocecap::consumer::abi::ControlHeader));\n'
                '  std::printf("sizeof.Descriptor %zu\\n", '
                'sizeof(rocecap::consumer::abi::Descriptor));\n'
                + "\n".join(lines) + "\n}\n")
    binary = os.path.join(work, "abi")
    build = subprocess.run([compiler, "-std=c++20", "-Wno-invalid-offsetof", source, "-o",
                            binary], capture_output=True, text=True, timeout=60)
    if build.returncode != 0:
        errors = [l for l in build.stderr.splitlines() if "error" in l][:4]
        message = ("the C++ header does not compile, ABI_OFFSETS not compared with it:\n  "
                   + "\n  ".join(errors))
        if os.environ.get("ROCECAP_ABI_STRICT"):
            check(False, message)
        else:
            print("WARNING: " + message)
        return
    found = dict(line.split() for line in
                 subprocess.run([binary], capture_output=True, text=True).stdout.splitlines())
    check(found.pop("sizeof.ControlHeader") == str(rc.CONTROL_HEADER_BYTES),
          "sizeof(ControlHeader) differs from the client's")
    check(found.pop("sizeof.Descriptor") == str(rc.DESCRIPTOR_BYTES),
          "sizeof(Descriptor) differs from the client's")
    for key, value in found.items():
        check(int(value) == rc.ABI_OFFSETS[key],
              f"offsetof {key}: header {value}, client {rc.ABI_OFFSETS[key]}")


def main():
    signal.alarm(60)  # a hang is a failure, not a stuck test run
    work = tempfile.mkdtemp(prefix="rocecap-pyconsumer.")
    path = os.path.join(work, "consumers.sock")
    streams = [
        FakeStream(0, "ant01@239.17.0.1:36001"),
        FakeStream(1, "ant01@239.17.0.2:36001", fmt="vdif", payload_memory="gpu"),
        FakeStream(2, "ant02@239.17.0.1:36001", slots=4, log_capacity=8),
        FakeStream(3, "ant03@239.17.0.1:36001"),
        FakeStream(4, "ant04@239.17.0.1:36001", slots=4, log_capacity=16, header_stride=64,
                   payload_stride=128),
        FakeStream(5, "ant05@239.17.0.1:36001", log_capacity=16),
        FakeStream(6, "ant06@239.17.0.1:36001", log_capacity=16),
    ]
    server = FakeServer(path, streams)
    started = time.monotonic()
    try:
        tests = [
            ("handshake and frames", lambda: test_handshake_and_frames(server, streams[0],
                                                                       streams[1], path)),
            ("slot reuse inside the log", lambda: test_slot_reuse_inside_log(server, path)),
            ("hold mode and detach", lambda: test_hold_and_detach(server, path)),
            ("error", lambda: test_error(server, path)),
            ("passed fds are read-only", lambda: test_passed_fds_are_read_only(path)),
            ("concurrent writer", lambda: test_concurrent_writer(server, path)),
            ("rocecap_tap", lambda: test_tap(server, path, work)),
            ("ABI against the C++ header", lambda: test_abi_against_header(work)),
        ]
        for name, test in tests:
            before = len(FAILURES)
            try:
                test()
            except Exception as e:  # a crash in one test is a failure; the others still run
                import traceback
                traceback.print_exc()
                check(False, f"{name}: raised {type(e).__name__}: {e}")
            print(f"{'ok  ' if len(FAILURES) == before else 'FAIL'} {name}")
    finally:
        server.stop()
        for s in streams:
            s.close()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(FAILURES)} failures in {time.monotonic() - started:.1f} s")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
