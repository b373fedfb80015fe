// The transport seam of the capture core: what every packet source (libpcap live and file,
// verbs, and any later one) offers the capture loop, the reports and the metrics.
//
// The model is spead2's `reader` (spead2, include/spead2/recv_reader.h): each transport implements
// one small interface and ends in one entry point of the core, here the Ingest of its interface:
//   - copying transports (pcap) call Ingest::on_frame(captured, wire_bytes, timestamp) per frame;
//   - zero-copy transports (verbs) call Ingest::on_slot(stream, slot, ...) per frame the NIC
//     scattered into a ring slot it had been given, and Ingest::count_oversize() for a frame
//     longer than the slot.
// Those per-packet calls are direct calls on the concrete (final) Ingest; the one virtual call
// is poll(), once per batch. A source is opened for one Ingest (its interface's streams) and
// delivers to nothing else.
//
// Threads: poll(), wait() and nic_drops() run on the interface's capture thread only. Everything
// const may be called from any thread (the metrics exposer, the main thread's status and manifest):
// it reads relaxed counters or values fixed at open.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace rocecap::capture {

// A source's own statistics, for the manifest, the status log and the metrics. Fields a
// transport has no notion of stay 0 / empty.
struct SourceReport {
  std::string device;        // where frames come from: the RDMA device (verbs), else the
                             // interface or file name
  uint64_t frames = 0;       // frames handed to the Ingest (completions handled, for verbs)
  uint64_t polls = 0;        // completion-queue polls (verbs)
  uint64_t empty_polls = 0;  // ... that found nothing
  uint64_t posted = 0;       // receive buffers handed to the NIC (verbs)
  uint64_t truncated = 0;    // captured shorter than on the wire (pcap snaplen)
  uint64_t oversize = 0;     // frames longer than the receive buffer (verbs LOC_LEN_ERR)
  uint64_t errors = 0;       // other failed receive completions (verbs, flushes excluded)
  uint64_t recoveries = 0;   // receive queues taken from the error state back to receiving
  std::string time_source;   // where receive timestamps come from (verbs: nic-raw-clock,
                             // software; pcap: kernel)
  std::string first_error;   // the first receive error with its context; empty: none
  // A source that leaves payloads in its own memory (capture/packet: kernel ring blocks):
  // where the payloads went, and the times every block was held (the kernel drops then).
  bool zero_copy = false;
  uint64_t zero_copy_lent = 0;
  uint64_t zero_copy_copied = 0;
  uint64_t held_block_stalls = 0;
  // The source sees a device-level view (a completion queue, a NIC clock): the manifest's
  // interfaces[].verbs section and the rocecap_cq_* / clock series are reported for it.
  bool device_view = false;
};

class PacketSource {
 public:
  // poll() results besides a frame count.
  static constexpr int kEnd = -1;     // a finite source (a replayed file) has nothing more
  static constexpr int kFailed = -2;  // the source failed; failure() says why

  virtual ~PacketSource() = default;

  // ---- capture thread ----
  // Hands up to `max` frames to the Ingest, each through one of its entry points. Returns how
  // many (0: none now), kEnd or kFailed. Never blocks much longer than about 100 ms, so a stop
  // request takes effect; never throws.
  virtual int poll(int max) noexcept = 0;
  // After a poll that found nothing: event mode sleeps until frames arrive or `timeout_ms`
  // passes; busy polling yields the CPU; a source whose poll() already waited returns at once.
  virtual void wait(int timeout_ms) noexcept = 0;
  // Frames the NIC, driver or kernel dropped before this source saw them, since it was opened;
  // nullopt when unknown (a counter file missing). May read sysfs or ask the kernel: call it at
  // a coarse pace (the loop publishes it for the other threads).
  virtual std::optional<uint64_t> nic_drops() const noexcept = 0;

  // ---- any thread ----
  // A replayed recording: it never loses frames to full rings (the loop hands it only as many
  // frames as the fullest ring has free slots), ends with kEnd and has nothing to drain at stop.
  virtual bool replay() const noexcept { return false; }
  virtual bool failed() const noexcept = 0;
  virtual std::string failure() const = 0;  // empty while not failed
  virtual SourceReport report() const = 0;
  // Receive-queue recoveries of stream `index` (the Ingest's stream order); 0 where the
  // transport has no per-stream queue.
  virtual uint64_t stream_recoveries(uint32_t /*index*/) const noexcept { return 0; }
  // An event the capture thread recorded but must not log itself (the first receive error),
  // handed over once; empty when there is none.
  virtual std::string take_event() { return {}; }
};

}  // namespace rocecap::capture
