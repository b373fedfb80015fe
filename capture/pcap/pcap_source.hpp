// libpcap as a packet source: live capture on any netdev, or replay of a pcap file.
//
// The portable backend, a PacketSource (capture/packet_source.hpp): poll() hands every Ethernet
// frame to the attached Ingest (Ingest::on_frame, a direct call), which copies it into the next
// slot of its stream's ring (doc/design.md). From the ring on, everything is the same code as the
// verbs path. dispatch() delivers to any FrameSink instead (tests, benchmarks, tools).
#pragma once

#include <pcap/pcap.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "capture/packet_source.hpp"
#include "capture/pcap/pcap_file_reader.hpp"
#include "common/relaxed_counter.hpp"

namespace rocecap::capture {
class Ingest;
}

namespace rocecap::capture::pcap {

// Receives frames on the capture thread. Must not block or throw.
class FrameSink {
 public:
  virtual void on_frame(std::span<const std::byte> captured, std::size_t wire_bytes,
                        int64_t timestamp_ns) noexcept = 0;

 protected:
  ~FrameSink() = default;
};

struct GroupPort {
  uint32_t group = 0;  // host byte order
  uint16_t port = 0;
};

struct LiveOptions {
  std::string interface;
  std::vector<GroupPort> groups;  // the BPF filter passes only these (VLAN tags allowed)
  int buffer_bytes = 256 << 20;   // kernel ring: absorbs writer hiccups at 8 KB frames
  int snaplen = 65535;
  int timeout_ms = 100;  // how long dispatch waits when nothing arrives
};

enum class Pace { fast, recorded };

struct SourceStats {
  uint64_t frames = 0;           // delivered to the sink
  uint64_t kernel_drops = 0;     // pcap_stats ps_drop: the capture buffer was full
  uint64_t interface_drops = 0;  // pcap_stats ps_ifdrop: dropped by the NIC or driver
  uint64_t truncated = 0;        // captured shorter than on the wire (snaplen)
};

struct PcapCloser {
  void operator()(pcap_t* p) const noexcept { pcap_close(p); }
};

class PcapSource final : public PacketSource {
 public:
  // Both throw std::runtime_error with libpcap's words, the interface or path (start-up only).
  static PcapSource open_live(const LiveOptions& options);
  static PcapSource open_file(const std::string& path, Pace pace);

  // The Ingest poll() delivers to; set once, before the first poll().
  void attach(Ingest& ingest) noexcept { ingest_ = &ingest; }

  // ---- PacketSource ----
  // dispatch() into the attached Ingest; a capture error (libpcap's, a bad record) fails the
  // source with its message instead of throwing.
  int poll(int max) noexcept override;
  // poll() itself waits up to timeout_ms (live) or a pace slice (replay): nothing to do here.
  void wait(int /*timeout_ms*/) noexcept override {}
  bool replay() const noexcept override { return !live_; }
  bool failed() const noexcept override { return shared_->failed.load(std::memory_order_acquire); }
  std::string failure() const override { return failed() ? shared_->failure : std::string(); }
  // Live: libpcap's ps_drop + ps_ifdrop (pcap_stats: capture thread only); a file: 0.
  std::optional<uint64_t> nic_drops() const noexcept override;
  SourceReport report() const override;

  // Delivers up to `max_frames` frames. Returns how many, 0 when a live capture had none
  // within timeout_ms or a replay at recorded pace waited kPaceSliceNs for a record not yet due
  // (kept for the next call), or -1 at the end of a file. Never blocks longer than about
  // 100 ms, so the caller's stop flag takes effect. Throws std::runtime_error on a capture
  // error.
  int dispatch(FrameSink& sink, int max_frames);

  SourceStats stats() const noexcept;
  bool is_live() const noexcept { return live_; }
  const std::string& name() const noexcept { return name_; }

 private:
  // A record read but not yet delivered (recorded pace: not due). Its bytes are the reader's
  // or libpcap's buffer, valid until the next read.
  struct Held {
    std::span<const std::byte> captured;
    std::size_t wire_bytes = 0;
    int64_t timestamp_ns = 0;
    bool valid = false;
  };
  static constexpr int64_t kPaceSliceNs = 100'000'000;  // longest sleep in one dispatch

  PcapSource(pcap_t* handle, std::string name, bool live, Pace pace);
  // Recorded pace: sleeps until the record is due, but at most kPaceSliceNs; whether it is due.
  bool due_after_wait(int64_t timestamp_ns) noexcept;
  // The delivery loops, for a FrameSink (dispatch) and for the Ingest (poll): one code path,
  // and a direct per-frame call on the concrete sink.
  template <class Sink>
  int dispatch_to(Sink& sink, int max_frames);
  template <class Sink>
  int dispatch_classic(Sink& sink, int max_frames);
  template <class Sink>
  void deliver(Sink& sink, const Held& h) noexcept;

  // The stdio buffer of a replayed file: declared before handle_ so it outlives the FILE that
  // pcap_close() closes.
  std::unique_ptr<char[]> file_buffer_;
  std::unique_ptr<pcap_t, PcapCloser> handle_;
  // A classic pcap file, read without libpcap; null: libpcap reads (pcapng, live).
  std::unique_ptr<PcapFileReader> reader_;
  std::string name_;
  bool live_ = false;
  Pace pace_ = Pace::fast;
  int64_t first_ts_ns_ = -1;   // recorded pace: first record's time ...
  int64_t start_mono_ns_ = 0;  // ... and the monotonic time it was replayed at
  Held held_;
  int poll_fd_ = -1;     // live: readable when frames are buffered
  int timeout_ms_ = 0;   // live: longest wait in one dispatch
  uint64_t frames_ = 0;  // capture thread; copied to shared_ once per poll
  uint64_t truncated_ = 0;
  Ingest* ingest_ = nullptr;
  // What other threads read (report, failed), on the heap so that the source stays movable.
  struct Shared {
    common::RelaxedCounter frames, truncated;
    std::string failure;  // written before failed is set
    std::atomic<bool> failed{false};
  };
  std::unique_ptr<Shared> shared_ = std::make_unique<Shared>();
};

// BPF expression passing UDP to the given groups and ports, untagged or under one or two VLAN
// tags, e.g. "(dst host 239.17.0.1 and udp dst port 36001) or
// (vlan and ((...) or (vlan and (...))))".
std::string build_filter(const std::vector<GroupPort>& groups);

}  // namespace rocecap::capture::pcap
