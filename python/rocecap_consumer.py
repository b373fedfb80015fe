"""rocecap consumer client: read the time-ordered stream rings of a running rocecapd in place.

rocecapd hands each consumer, through a Unix socket, read-only file descriptors of every
stream's shared memory: a control mapping (ControlHeader, slot generations, descriptor log), a
header slab and a payload slab. This module speaks that protocol and reads the log the way
consumer/client/rocecap_consumer.hpp (namespace abi) defines it, without copying frame data:
frames come back as read-only numpy views into the mapped slabs.

Only the standard library and numpy (Debian's python3-numpy) are used, so a pipeline stage can
import this file without building anything.

    with Client("/run/rocecap/consumers.sock", streams=["ant01"]) as client:
        stream = client.streams[0]
        while True:
            event = stream.next()
            if event is None:          # nothing published yet: poll again later
                time.sleep(0.001)
            elif isinstance(event, Frame):
                volts = event.samples(np.int16)     # zero copy, read-only
                ...use volts...
                if not stream.still_valid(event):   # the slot was reused while we looked
                    ...drop what was computed...
            elif isinstance(event, Missed):
                print("lost", event.count, "frames from", event.first_index)
            elif isinstance(event, Ended):
                break
            client.report()            # every few ms to s: progress (and hold-mode acks)

Why the reads are safe without locks: the writer never waits for a consumer, so every read is
checked afterwards. A descriptor is guarded by a sequence number (its log position, written
first as UINT64_MAX and last as the position); a slot's data by its generation, which the writer
bumps before it reuses the slot. A frame whose check fails is reported as missed, never
returned. The loads of seq, write_pos and the generations are aligned 8-byte loads (memoryview
items of format 'Q'), which are single instructions on x86-64; x86's ordering of loads with
loads keeps them in program order, which is all a sequence lock reader needs.

Layout assumptions are gathered in ABI_OFFSETS below; tests/consumers/python_fake_producer_test.py
compares them with offsetof() from the C++ header whenever that header compiles.
"""

import mmap
import os
import socket
import struct
import sys

import numpy as np

if sys.byteorder != "little":  # the contract is x86-64 shared memory, read in place
    raise ImportError("rocecap_consumer reads little-endian shared memory only")

# ---------------------------------------------------------------------------------------------
# The contract (abi:: in consumer/client/rocecap_consumer.hpp), version 1
# ---------------------------------------------------------------------------------------------
MAGIC = 0x31534E4F43504352  # "RCPCONS1" little-endian
VERSION = 1
NO_SLOT = 0xFFFFFFFF  # Descriptor.slot of a fill frame
WRITING = 0xFFFFFFFFFFFFFFFF  # Descriptor.seq while the writer rewrites it
MESSAGE_BYTES = 4096  # bound of one socket message, both ways
CONTROL_HEADER_BYTES = 256
DESCRIPTOR_BYTES = 128
DESCRIPTOR_HEADER_BYTES = 64  # Descriptor.header[64]

FLAG_INVALID = 1 << 0
FLAG_LATE = 1 << 1
FLAG_SEGMENT_START = 1 << 2
FLAG_HW_TIMESTAMP = 1 << 3
FLAG_FILL = 1 << 8

STATE_RUNNING = 0
STATE_ENDED = 1

FORMAT_NAMES = {0: "codif", 1: "udp", 2: "vdif"}
PAYLOAD_MEMORY_NAMES = {0: "host", 1: "gpu"}

# Byte offsets of every field, as the C++ compiler lays out the structs (natural alignment,
# write_pos alignas(64)). Kept in one table so that a change of the header is one edit here and
# so the test can compare it with offsetof().
ABI_OFFSETS = {
    "ControlHeader.magic": 0,
    "ControlHeader.version": 8,
    "ControlHeader.header_size": 12,
    "ControlHeader.slots": 16,
    "ControlHeader.log_capacity": 20,
    "ControlHeader.header_stride": 24,
    "ControlHeader.payload_stride": 32,
    "ControlHeader.header_slab_bytes": 40,
    "ControlHeader.payload_slab_bytes": 48,
    "ControlHeader.payload_memory": 56,
    "ControlHeader.format": 60,
    "ControlHeader.generations_offset": 64,
    "ControlHeader.log_offset": 72,
    "ControlHeader.control_bytes": 80,
    "ControlHeader.write_pos": 128,
    "ControlHeader.state": 136,
    "ControlHeader.frame_index_base": 144,
    "Descriptor.seq": 0,
    "Descriptor.frame_index": 8,
    "Descriptor.timestamp_ns": 16,
    "Descriptor.generation": 24,
    "Descriptor.slot": 32,
    "Descriptor.flags": 36,
    "Descriptor.header_len": 38,
    "Descriptor.data0_off": 40,
    "Descriptor.data0_len": 44,
    "Descriptor.data1_off": 48,
    "Descriptor.data1_len": 52,
    "Descriptor.retention_pos": 56,
    "Descriptor.header": 64,
}

# The fixed part of ControlHeader, magic .. control_bytes (88 bytes from offset 0).
CONTROL_STATIC = struct.Struct("<QIIIIQQQQIIQQQ")
# Descriptor seq .. retention_pos (64 bytes from offset 0); header[64] follows.
DESCRIPTOR_FIELDS = struct.Struct("<QQqQIHHIIIIQ")

_WRITE_POS_WORD = ABI_OFFSETS["ControlHeader.write_pos"] // 8
_STATE_WORD = ABI_OFFSETS["ControlHeader.state"] // 4
_FRAME_INDEX_BASE_WORD = ABI_OFFSETS["ControlHeader.frame_index_base"] // 8
_DESCRIPTOR_WORDS = DESCRIPTOR_BYTES // 8
_HEADER_AT = ABI_OFFSETS["Descriptor.header"]

MODES = ("lossy", "hold")


class ConsumerError(Exception):
    """rocecapd refused us (`error TEXT`: .text is TEXT) or broke the contract."""

    def __init__(self, text):
        super().__init__(text)
        self.text = text


# ---------------------------------------------------------------------------------------------
# Events returned by Stream.next()
# ---------------------------------------------------------------------------------------------
def _read_only(array):
    array.flags.writeable = False
    return array


_EMPTY = _read_only(np.zeros(0, dtype=np.uint8))
_zero_bytes = bytes(65536)


def _zeros(size):
    """A read-only uint8 array of zeros (fill frame data) that can never be made writeable.

    Backed by an immutable bytes object shared between fill frames, so a fill frame costs no
    allocation (numpy refuses writeable=True over a bytes buffer).
    """
    global _zero_bytes
    if size > len(_zero_bytes):
        _zero_bytes = bytes(size)
    if size == 0:
        return _EMPTY
    return np.frombuffer(_zero_bytes, dtype=np.uint8, count=size)


class Frame:
    """One frame of the stream, in time order, as the raw file holds it.

    `header` is a copy (taken with the descriptor, so it is never torn). The data are read-only
    numpy views into rocecapd's slabs, not copies: they stay meaningful only while
    Stream.still_valid(frame) is true, so check after using them, or take a validated copy with
    Stream.frame_bytes(frame).
    """

    __slots__ = ("position", "frame_index", "timestamp_ns", "flags", "header", "slot",
                 "generation", "retention_pos", "data0_offset", "data0_len", "data1_offset",
                 "data1_len", "_data0", "_data1", "_torn_counted")

    def __init__(self, position, frame_index, timestamp_ns, flags, header, slot, generation,
                 retention_pos, data0_offset, data0_len, data1_offset, data1_len, data0, data1):
        self.position = position          # place in the stream's descriptor log
        self.frame_index = frame_index    # absolute frame index
        self.timestamp_ns = timestamp_ns  # receive time, Unix ns (fill: 0)
        self.flags = flags                # FLAG_* bits
        self.header = header              # bytes, header_len long
        self.slot = slot                  # NO_SLOT for a fill frame
        self.generation = generation
        self.retention_pos = retention_pos
        self.data0_offset = data0_offset  # of data0 in the header slab
        self.data0_len = data0_len        # bytes in the header slot
        self.data1_offset = data1_offset  # of data1 in the payload slab (for GPU readers)
        self.data1_len = data1_len        # bytes in the payload slot (also GPU and fill)
        self._data0 = data0               # numpy views (None: in GPU memory)
        self._data1 = data1
        self._torn_counted = False

    @property
    def fill(self):
        """rocecapd's stand-in for a lost frame (no slot, or FLAG_FILL): header, zero data."""
        return self.slot == NO_SLOT

    @property
    def size(self):
        """Bytes of the whole frame as the raw file holds it."""
        return len(self.header) + self.data0_len + self.data1_len

    def data_arrays(self):
        """The frame data as one or two read-only uint8 views, in file order.

        Two when the writer split the data between the header slot and the payload slot; a
        fill frame gives one read-only array of zeros; empty parts are left out. Data in GPU
        memory is not mapped here (use data1_offset/data1_len with the stream's cuda_ipc).
        """
        if self.fill:
            return [self._data1] if self.data1_len else []
        parts = []
        if self.data0_len:
            parts.append(self._data0)
        if self.data1_len:
            if self._data1 is None:
                raise ValueError("frame data is in GPU memory; it is not mapped in this process")
            parts.append(self._data1)
        return parts

    @property
    def data(self):
        """The frame data as one read-only uint8 view (zero copy).

        Raises ValueError when the data is split across the two slabs (use data_arrays() or
        Stream.frame_bytes()), since joining them would need a copy.
        """
        parts = self.data_arrays()
        if not parts:
            return _EMPTY
        if len(parts) > 1:
            raise ValueError("frame data is split across the header and payload slots; "
                             "use data_arrays() or Stream.frame_bytes()")
        return parts[0]

    def samples(self, dtype):
        """The data reinterpreted as `dtype` (e.g. np.int16, np.dtype('<i2')), read-only, no copy.

        A fill frame gives zeros. The data length must be a multiple of the item size.
        """
        dtype = np.dtype(dtype)
        data = self.data
        if len(data) % dtype.itemsize:
            raise ValueError(f"{len(data)} data bytes are not a whole number of {dtype} items")
        return data.view(dtype)

    def __repr__(self):
        kind = "fill " if self.fill else ""
        return (f"Frame({kind}index={self.frame_index} position={self.position} "
                f"bytes={self.size})")


class Missed:
    """Frames overwritten (or torn) before they were read: `count` frames from `first_index`.

    first_index is the index the reader expected next (the last returned frame's index + 1), or
    a torn frame's own index. Before any frame was returned it is estimated from the control
    header's frame_index_base plus the log position. Fill frames count like any frame.
    """

    __slots__ = ("first_index", "count")

    def __init__(self, first_index, count):
        self.first_index = first_index
        self.count = count

    def __eq__(self, other):
        return (isinstance(other, Missed) and self.first_index == other.first_index
                and self.count == other.count)

    def __hash__(self):
        return hash((self.first_index, self.count))

    def __repr__(self):
        return f"Missed(first_index={self.first_index}, count={self.count})"


class Ended:
    """rocecapd ended the run and everything it published was handed out."""

    __slots__ = ()

    def __eq__(self, other):
        return isinstance(other, Ended)

    def __hash__(self):
        return 0

    def __repr__(self):
        return "Ended()"


_ENDED = Ended()


# ---------------------------------------------------------------------------------------------
# One stream's mappings and reader state
# ---------------------------------------------------------------------------------------------
def _map_read_only(fd, what):
    """Maps all of `fd` shared and read-only; None for an empty object (nothing to read)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return None
    try:
        # MAP_POPULATE (Linux, Python 3.10+): page tables built now, not by a fault per page
        # on the reading path.
        flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
        return mmap.mmap(fd, size, flags=flags, prot=mmap.PROT_READ)
    except OSError as e:
        raise ConsumerError(f"cannot map the {what} ({size} bytes): {e}") from e


class Stream:
    """One stream's time-ordered ring, read in place. Use next(); never blocks the writer."""

    def __init__(self, info, fds, start="live"):
        self.index = int(info["index"])
        self.name = info["name"]
        self.format = info["format"]
        self.payload_memory = info["payload_memory"]
        self.cuda_ipc = info.get("cuda_ipc")  # hex of cudaIpcMemHandle_t (gpu)
        self.gpu_device = int(info["gpu_device"]) if "gpu_device" in info else None
        # where the payload slab starts in the allocation the handle maps
        self.cuda_offset = int(info.get("cuda_offset", "0"))
        self._maps = []
        self._views = []
        self._closed = False
        try:
            self._map(fds)
        except BaseException:
            self.close()
            raise
        published = self.published
        if start == "live":
            # rocecapd's position when it attached us (position=): frames published between
            # then and now (capture may start the moment we attached, consumers.wait_for)
            # belong to us too; an older rocecapd does not say, then: now.
            self._next_pos = min(int(info.get("position", published)), published)
        elif start == "oldest":
            self._next_pos = max(0, published - self.log_capacity + 1)
        else:
            raise ValueError(f"start must be 'live' or 'oldest', not {start!r}")
        self._expect_index = None  # frame index after the last one handed out
        self._ended = False
        self.frames_read = 0
        self.frames_missed = 0
        self.ack_position = 0  # hold mode: retention_pos + 1 of the last frame done with

    # -- setting up ----------------------------------------------------------------------------
    def _map(self, fds):
        want = 3 if self.payload_memory == "host" else 2
        if len(fds) != want:
            raise ConsumerError(f"stream {self.name}: {len(fds)} file descriptors for "
                                f"payload_memory={self.payload_memory}, expected {want}")
        control = _map_read_only(fds[0], f"control memory of {self.name}")
        if control is None or len(control) < CONTROL_HEADER_BYTES:
            raise ConsumerError(f"stream {self.name}: control memory smaller than its header")
        self._maps.append(control)
        self._control = control
        (magic, version, header_size, self.slots, self.log_capacity, self.header_stride,
         self.payload_stride, self.header_slab_bytes, self.payload_slab_bytes, payload_memory,
         format_code, self.generations_offset, self.log_offset,
         self.control_bytes) = CONTROL_STATIC.unpack_from(control, 0)
        self._check_control(len(control), magic, version, header_size, payload_memory,
                            format_code)

        self._header_slab = _map_read_only(fds[1], f"header slab of {self.name}")
        if self._header_slab is not None:
            self._maps.append(self._header_slab)
        if (self._header_slab is None and self.header_slab_bytes) or (
                self._header_slab is not None and len(self._header_slab) < self.header_slab_bytes):
            raise ConsumerError(f"stream {self.name}: header slab smaller than "
                                f"header_slab_bytes={self.header_slab_bytes}")
        self._payload_slab = None
        if self.payload_memory == "host":
            self._payload_slab = _map_read_only(fds[2], f"payload slab of {self.name}")
            if self._payload_slab is not None:
                self._maps.append(self._payload_slab)
            size = 0 if self._payload_slab is None else len(self._payload_slab)
            if size < self.payload_slab_bytes:
                raise ConsumerError(f"stream {self.name}: payload slab smaller than "
                                    f"payload_slab_bytes={self.payload_slab_bytes}")

        # Word views for the loads that race with the writer (see the module docstring).
        whole = memoryview(control)
        self._views.append(whole)
        self._control_u64 = whole[:CONTROL_HEADER_BYTES].cast("Q")
        self._control_u32 = whole[:CONTROL_HEADER_BYTES].cast("I")
        gen_end = self.generations_offset + 8 * self.slots
        self._generations = whole[self.generations_offset:gen_end].cast("Q")
        log_end = self.log_offset + DESCRIPTOR_BYTES * self.log_capacity
        self._log_u64 = whole[self.log_offset:log_end].cast("Q")
        self._views += [self._control_u64, self._control_u32, self._generations, self._log_u64]

    def _check_control(self, mapped, magic, version, header_size, payload_memory, format_code):
        """Refuses memory that is not this contract, before trusting any offset in it."""
        where = f"stream {self.name}: control memory"
        if magic != MAGIC:
            raise ConsumerError(f"{where}: magic {magic:#x} is not {MAGIC:#x}")
        if version != VERSION:
            raise ConsumerError(f"{where}: version {version}, this client speaks {VERSION}")
        if header_size != CONTROL_HEADER_BYTES:
            raise ConsumerError(f"{where}: header_size {header_size}, "
                                f"expected {CONTROL_HEADER_BYTES}")
        cap = self.log_capacity
        if cap == 0 or cap & (cap - 1):
            raise ConsumerError(f"{where}: log_capacity {cap} is not a power of two")
        if self.generations_offset % 8 or self.log_offset % 8:
            raise ConsumerError(f"{where}: generations/log offsets are not 8-byte aligned")
        if self.control_bytes > mapped:
            raise ConsumerError(f"{where}: control_bytes {self.control_bytes} > mapped {mapped}")
        if (self.generations_offset < CONTROL_HEADER_BYTES
                or self.generations_offset + 8 * self.slots > self.control_bytes
                or self.log_offset < CONTROL_HEADER_BYTES
                or self.log_offset + DESCRIPTOR_BYTES * cap > self.control_bytes):
            raise ConsumerError(f"{where}: generations or log outside control_bytes")
        if PAYLOAD_MEMORY_NAMES.get(payload_memory) != self.payload_memory:
            raise ConsumerError(f"{where}: payload_memory {payload_memory} but the stream "
                                f"message said {self.payload_memory}")
        if FORMAT_NAMES.get(format_code) != self.format:
            raise ConsumerError(f"{where}: format {format_code} but the stream message said "
                                f"{self.format}")
        if self.header_stride * self.slots > self.header_slab_bytes:
            raise ConsumerError(f"{where}: header_stride x slots exceeds header_slab_bytes")
        if self.payload_memory == "host" and (
                self.payload_stride * self.slots > self.payload_slab_bytes):
            raise ConsumerError(f"{where}: payload_stride x slots exceeds payload_slab_bytes")

    # -- the writer's state --------------------------------------------------------------------
    @property
    def published(self):
        """Descriptors the writer has published so far (ControlHeader.write_pos)."""
        return self._control_u64[_WRITE_POS_WORD]

    @property
    def state(self):
        return self._control_u32[_STATE_WORD]

    @property
    def frame_index_base(self):
        return self._control_u64[_FRAME_INDEX_BASE_WORD]

    @property
    def position(self):
        """The next log position this reader will look at."""
        return self._next_pos

    @property
    def lag(self):
        return self.published - self._next_pos

    @property
    def payload_slab(self):
        """The whole payload slab as a read-only uint8 array (None when it is in GPU memory)."""
        if self._payload_slab is None:
            return None
        return np.frombuffer(self._payload_slab, dtype=np.uint8)

    # -- reading -------------------------------------------------------------------------------
    def _expected_index(self, position):
        if self._expect_index is not None:
            return self._expect_index
        return self.frame_index_base + position

    def _skip(self, first_index, count, new_position):
        self._next_pos = new_position
        self._expect_index = first_index + count
        self.frames_missed += count
        return Missed(first_index, count)

    def next(self):
        """The next event: a Frame, Missed, Ended, or None when nothing new is published yet.

        Never blocks and never writes shared memory. A frame whose descriptor or slot was
        reused while we looked is returned as Missed, never as a Frame.
        """
        if self._closed:
            raise ValueError("stream is closed")
        position = self._next_pos
        published = self.published
        if position >= published:
            if self.state != STATE_ENDED:
                return None
            # The writer publishes its last descriptor before it sets kEnded: look again.
            if position >= self.published:
                self._ended = True
                return _ENDED
        cap = self.log_capacity
        word = (position & (cap - 1)) * _DESCRIPTOR_WORDS
        byte = self.log_offset + (position & (cap - 1)) * DESCRIPTOR_BYTES
        seq = self._log_u64[word]
        if seq == position:
            raw = self._control[byte:byte + DESCRIPTOR_BYTES]
            seq = self._log_u64[word]
        if seq != position:
            if seq != WRITING and seq < position:
                return None  # not published yet (cannot happen below write_pos; be safe)
            # Overwritten: the writer lapped us. Resume one descriptor past the one it may be
            # rewriting now, and count every position jumped over.
            resume = max(position + 1, self.published - cap + 1)
            return self._skip(self._expected_index(position), resume - position, resume)

        (_, frame_index, timestamp_ns, generation, slot, flags, header_len, data0_off,
         data0_len, data1_off, data1_len, retention_pos) = DESCRIPTOR_FIELDS.unpack_from(raw, 0)
        if header_len > DESCRIPTOR_HEADER_BYTES:
            raise ConsumerError(f"stream {self.name}: descriptor {position} header_len "
                                f"{header_len} > {DESCRIPTOR_HEADER_BYTES}")
        header = raw[_HEADER_AT:_HEADER_AT + header_len]

        if flags & FLAG_FILL or slot == NO_SLOT:
            # No slot: all of the data (data1_len; data0_len is 0 by contract) reads as zeros.
            size = data0_len + data1_len
            zeros = _zeros(size)
            frame = Frame(position, frame_index, timestamp_ns, flags, header, NO_SLOT,
                          generation, retention_pos, 0, 0, 0, size, None, zeros)
        else:
            self._check_bounds(position, slot, data0_off, data0_len, data1_off, data1_len)
            if self._generations[slot] != generation:  # slot reused since it was published
                self._next_pos = position + 1
                self._expect_index = frame_index + 1
                self.frames_missed += 1
                return Missed(frame_index, 1)
            data0_offset = slot * self.header_stride + data0_off
            data1_offset = slot * self.payload_stride + data1_off
            data0 = self._view(self._header_slab, data0_offset, data0_len)
            data1 = None
            if self._payload_slab is not None:
                data1 = self._view(self._payload_slab, data1_offset, data1_len)
            frame = Frame(position, frame_index, timestamp_ns, flags, header, slot, generation,
                          retention_pos, data0_offset, data0_len, data1_offset, data1_len,
                          data0, data1)
        self._next_pos = position + 1
        self._expect_index = frame_index + 1
        self.frames_read += 1
        return frame

    def _check_bounds(self, position, slot, data0_off, data0_len, data1_off, data1_len):
        if (slot >= self.slots or data0_off + data0_len > self.header_stride
                or data1_off + data1_len > self.payload_stride):
            raise ConsumerError(f"stream {self.name}: descriptor {position} points outside "
                                f"slot {slot} (slots={self.slots})")

    @staticmethod
    def _view(slab, offset, length):
        if length == 0:
            return _EMPTY
        # The mapping is PROT_READ, so the buffer (and this array) is read-only.
        return np.frombuffer(slab, dtype=np.uint8, count=length, offset=offset)

    def still_valid(self, frame):
        """Whether frame's slot still holds what it described (its generation is unchanged).

        Call after using the zero-copy views: False means what was read may be torn; drop it
        (count_torn(frame) counts it missed).
        """
        if frame.slot == NO_SLOT:
            return True
        return self._generations[frame.slot] == frame.generation

    def count_torn(self, frame):
        """Moves a frame that turned out torn from frames_read to frames_missed (once)."""
        if not frame._torn_counted:
            frame._torn_counted = True
            self.frames_read -= 1
            self.frames_missed += 1

    def frame_bytes(self, frame):
        """A bytes copy of the whole frame as the raw file holds it, checked after copying.

        None when the slot was reused during the copy (the frame is then counted missed).
        Raises ValueError for data that lies in GPU memory.
        """
        if frame.fill:
            return frame.header + bytes(frame.data1_len)
        if frame.data1_len and self._payload_slab is None:
            raise ValueError(f"stream {self.name}: frame data is in GPU memory")
        parts = [frame.header]
        if frame.data0_len:
            parts.append(self._header_slab[frame.data0_offset:
                                           frame.data0_offset + frame.data0_len])
        if frame.data1_len:
            parts.append(self._payload_slab[frame.data1_offset:
                                            frame.data1_offset + frame.data1_len])
        copy = b"".join(parts)
        if not self.still_valid(frame):
            self.count_torn(frame)
            return None
        return copy

    def done_with(self, frame):
        """Hold mode: rocecapd may release this frame (and everything before it).

        Sent with the next Client.report(). Fill frames hold nothing.
        """
        if not frame.fill:
            self.ack_position = max(self.ack_position, frame.retention_pos + 1)

    @property
    def ended(self):
        return self._ended

    def close(self):
        """Unmaps the stream. Mappings still used by live Frame views are released with them."""
        self._closed = True
        for view in reversed(self._views):
            view.release()
        self._views = []
        for m in self._maps:
            try:
                m.close()
            except BufferError:
                pass  # numpy views of a frame still export it; the kernel unmaps with them
        self._maps = []

    def __repr__(self):
        return (f"Stream(index={self.index}, name={self.name!r}, format={self.format}, "
                f"payload_memory={self.payload_memory})")


# ---------------------------------------------------------------------------------------------
# The connection to rocecapd
# ---------------------------------------------------------------------------------------------
def parse_message(text):
    """Splits `WORD key=value key=value ...` into (WORD, {key: value}).

    Tokens without '=' after the first are kept under the key "" joined by spaces, so that a
    reason like `detached hold bound passed` survives whole.
    """
    words = text.split()
    if not words:
        return "", {}
    fields = {}
    loose = []
    for token in words[1:]:
        key, eq, value = token.partition("=")
        if eq:
            fields[key] = value
        else:
            loose.append(token)
    if loose:
        fields[""] = " ".join(loose)
    return words[0], fields


def _check_word(what, value):
    if not value or any(c.isspace() or c == "," for c in value) or not value.isprintable():
        raise ValueError(f"{what} {value!r} must be one printable word without commas")
    return value


class Client:
    """A consumer connection to rocecapd: says hello, maps every stream it is given.

    Client(socket_path, streams=None, mode="lossy", name="python", timeout=10.0, start="live")

    streams: None for every stream rocecapd allows, else stream names
    ("ant01@239.17.0.1:36001") or antenna names ("ant01"), as a list or one comma-separated
    string. mode: "lossy" (rocecapd never waits) or "hold" (rocecapd keeps frames until
    done_with() + report(), within its hold bound). timeout bounds the handshake only. start:
    "live" reads from what is published after connecting, "oldest" from the oldest descriptor
    still in each log. Raises ConsumerError carrying rocecapd's reason, OSError when the socket
    cannot be reached.
    """

    def __init__(self, socket_path, streams=None, mode="lossy", name="python", timeout=10.0,
                 start="live"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        if streams is None:
            selection = "all"
        else:
            names = streams.split(",") if isinstance(streams, str) else list(streams)
            if not names:
                raise ValueError("streams: name at least one stream or antenna (or None: all)")
            selection = ",".join(_check_word("stream name", n) for n in names)
        _check_word("client name", name)
        self.socket_path = socket_path
        self.mode = mode
        self.name = name
        self.streams = []
        self.hold_frames = 0
        self.hold_ms = 0
        self.detach_reason = None  # set when rocecapd says `detached REASON`
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._sock.settimeout(timeout)
            self._sock.connect(socket_path)
            self._send(f"hello version={VERSION} mode={mode} streams={selection} name={name}")
            self._handshake(start)
            self._sock.setblocking(False)
        except BaseException:
            self.close()
            raise

    def _send(self, text, flags=0):
        data = text.encode("ascii")
        if len(data) > MESSAGE_BYTES:
            raise ValueError(f"message of {len(data)} bytes exceeds {MESSAGE_BYTES}")
        self._sock.sendmsg([data], [], flags)

    def _receive(self):
        """One message and the file descriptors that came with it (blocking, with timeout)."""
        fd_room = socket.CMSG_SPACE(8 * 4)  # room for more fds than promised, to close them
        try:
            data, ancillary, flags, _ = self._sock.recvmsg(MESSAGE_BYTES, fd_room)
        except socket.timeout:
            raise ConsumerError(f"no answer from rocecapd within {self._sock.gettimeout()} s "
                                "during the handshake") from None
        fds = []
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                whole = len(payload) - len(payload) % 4
                fds += list(struct.unpack(f"{whole // 4}i", payload[:whole]))
        if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
            for fd in fds:
                os.close(fd)
            raise ConsumerError("rocecapd sent a message longer than the contract allows")
        if not data:
            for fd in fds:
                os.close(fd)
            raise ConsumerError("rocecapd closed the connection during the handshake")
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            for fd in fds:
                os.close(fd)
            raise ConsumerError("rocecapd sent a message that is not ASCII") from None
        return text.rstrip("\n"), fds

    def _handshake(self, start):
        while True:
            text, fds = self._receive()
            try:
                kind, fields = parse_message(text)
                if kind == "error":
                    raise ConsumerError(text[len("error"):].strip())
                if kind == "stream":
                    self._add_stream(text, fields, fds, start)
                elif kind == "ready":
                    self._ready(text, fields)
                    return
                else:
                    raise ConsumerError(f"unexpected message during the handshake: {text!r}")
            finally:
                for fd in fds:  # mapped (or refused): the descriptors are not needed any more
                    os.close(fd)

    def _add_stream(self, text, fields, fds, start):
        for key in ("index", "name", "format", "payload_memory"):
            if key not in fields:
                raise ConsumerError(f"stream message without {key}=: {text!r}")
        if fields["payload_memory"] not in PAYLOAD_MEMORY_NAMES.values():
            raise ConsumerError(f"stream message with unknown payload_memory: {text!r}")
        if fields["format"] not in FORMAT_NAMES.values():
            raise ConsumerError(f"stream message with unknown format: {text!r}")
        try:
            int(fields["index"])
            int(fields.get("gpu_device", "0"))
        except ValueError:
            raise ConsumerError(f"stream message with a bad number: {text!r}") from None
        self.streams.append(Stream(fields, fds, start))

    def _ready(self, text, fields):
        try:
            count = int(fields.get("streams", "-1"))
            self.hold_frames = int(fields.get("hold_frames", "0"))
            self.hold_ms = int(fields.get("hold_ms", "0"))
        except ValueError:
            raise ConsumerError(f"bad ready message: {text!r}") from None
        if count != len(self.streams):
            raise ConsumerError(f"ready says streams={fields.get('streams')} but "
                                f"{len(self.streams)} stream messages came")
        if fields.get("mode", self.mode) != self.mode:
            raise ConsumerError(f"asked for mode={self.mode}, rocecapd answered {text!r}")

    # -- after the handshake --------------------------------------------------------------------
    @property
    def connected(self):
        """Whether rocecapd still holds the connection (False after detached or closed)."""
        return self._sock is not None

    def _poll_server(self):
        """Reads what rocecapd sent since (non-blocking): notices `detached` and closing."""
        while self._sock is not None:
            try:
                data, ancillary, _, _ = self._sock.recvmsg(MESSAGE_BYTES,
                                                           socket.CMSG_SPACE(8 * 4))
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:
                self._lost(f"connection lost: {e}")
                return
            for level, kind, payload in ancillary:  # none are expected: do not leak any
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    whole = len(payload) - len(payload) % 4
                    for fd in struct.unpack(f"{whole // 4}i", payload[:whole]):
                        os.close(fd)
            if not data:
                self._lost(self.detach_reason or "rocecapd closed the connection")
                return
            text = data.decode("ascii", "replace").strip()
            if text.startswith("detached"):
                self._lost(text[len("detached"):].strip() or "detached")
                return
            # Anything else is for a later version of the contract: ignored.

    def _lost(self, reason):
        if self.detach_reason is None:
            self.detach_reason = reason
        self._sock.close()
        self._sock = None

    def report(self):
        """Tells rocecapd how far each stream was read and, in hold mode, what it may release.

        Non-blocking; call every few ms to s. A report the socket cannot take right now is
        dropped (the next one carries the same totals). Returns False once rocecapd closed the
        connection; detach_reason then says why.
        """
        self._poll_server()
        if self._sock is None:
            return False
        lines = []
        for s in self.streams:
            ack = s.ack_position if self.mode == "hold" else 0
            lines.append(f"ack {s.index} {s.position} {s.frames_read} {s.frames_missed} {ack}\n")
        message = ""
        for line in lines:
            if len(message) + len(line) > MESSAGE_BYTES:
                if not self._send_report(message):
                    return self._sock is not None
                message = ""
            message += line
        if message:
            self._send_report(message)
        return self._sock is not None

    def _send_report(self, message):
        try:
            self._send(message, socket.MSG_DONTWAIT)
            return True
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as e:
            self._lost(f"connection lost: {e}")
            return False

    def close(self):
        """Closes the connection and unmaps the streams (see Stream.close)."""
        for s in self.streams:
            s.close()
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
