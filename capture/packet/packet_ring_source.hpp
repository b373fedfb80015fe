// A live capture that reads the kernel's AF_PACKET TPACKET_V3 ring itself instead of through
// libpcap, so that a frame's payload can stay in the kernel block it arrived in until the writer
// has written it (zero copy out of the kernel; doc/design.md, "Data path").
//
// libpcap cannot lend its blocks: pcap_next_ex()/pcap_dispatch() hand the previous block back to
// the kernel on the next call (libpcap pcap-linux.c, pcap_read_linux_mmap_v3), so every frame
// must be copied out before the next read. Here blocks go back to the kernel only when every
// slot lent from them is released, oldest first: the kernel fills blocks strictly in ring order
// (net/packet/af_packet.c, packet_current_rx_frame -> __packet_lookup_frame_in_block), so a
// later block returned early would not be used sooner.
//
// Behaviour kept from the libpcap source (capture/pcap/pcap_source.*): the same BPF filter
// (compiled by libpcap for this interface, so VLAN tests use the kernel's tag metadata),
// incoming frames only, VLAN tags the kernel stripped put back into the frame as libpcap does,
// nanosecond host timestamps, kernel drops from PACKET_STATISTICS, snaplen truncation counted.
//
// The bound on holding: a block is lent (its frames' payload slots point into it) only while
// fewer than `max_lent_blocks` blocks are out on loan and the oldest loan is younger than
// `max_hold_ms`; otherwise its frames are copied into ring slots as before and counted in
// ZeroCopyStats::copied_frames. Copying does not free a block that is already lent: when a
// frozen writer keeps the oldest block, the kernel runs out of blocks once it wraps round to it,
// and from then on it drops frames (kernel_drops, the NIC-drop counter) until the writer
// releases the block. Each such episode is counted in ZeroCopyStats::held_block_stalls, so a
// held block never stalls capture silently.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "capture/packet/lending_sink.hpp"
#include "capture/packet_source.hpp"
#include "capture/pcap/pcap_source.hpp"
#include "common/relaxed_counter.hpp"

struct tpacket3_hdr;

namespace rocecap::capture {
class Ingest;
}

namespace rocecap::capture::packet {

struct RingOptions {
  std::string interface;
  std::vector<pcap::GroupPort> groups;  // the BPF filter passes only these (VLAN tags allowed)
  std::size_t buffer_bytes = std::size_t{256} << 20;  // kernel ring, rounded down to blocks
  // One block: the unit handed between kernel and reader and of lending. Small enough that
  // a held block pins little, large enough for a batch of 8 KB frames per wake-up.
  uint32_t block_bytes = 1u << 20;
  // The kernel retires a block that is not full after this long (tp_retire_blk_tov,
  // Documentation/networking/packet_mmap.rst): the latency of a quiet stream's frames. While
  // blocks are lent it also sets how long the ring can buffer at least: every block holds
  // this long of traffic or is full, so 256 blocks x 8 ms >= 2 s in front of a stalled writer
  // (with 2 ms, half a second: 10 s runs of bench/kernel_path_bench.sh on a loaded machine
  // lost frames to it).
  unsigned block_timeout_ms = 8;
  int snaplen = 65535;
  int timeout_ms = 100;  // how long dispatch waits when nothing arrives
  bool zero_copy = true;
  uint32_t max_lent_blocks = 0;  // 0: half the ring's blocks
  unsigned max_hold_ms = 100;    // a block lent longer than this stops further lending
};

struct ZeroCopyStats {
  uint64_t lent_frames = 0;        // payload left in the kernel block (no copy)
  uint64_t copied_frames = 0;      // copied because lending was off or its bound reached
  uint64_t held_block_stalls = 0;  // times the kernel had no free block: all held by loans
  uint64_t blocks = 0;             // blocks read
  uint32_t blocks_out = 0;         // blocks not yet handed back to the kernel, now
};

// A capture::PacketSource (capture/packet_source.hpp): poll() delivers to the attached Ingest with
// direct calls (Ingest::on_frame / on_frame_lent); the LendingSink overloads serve tests.
class PacketRingSource final : public capture::PacketSource {
 public:
  // Throws std::runtime_error naming the interface and the step that failed (start-up only).
  static std::unique_ptr<PacketRingSource> open(const RingOptions& options);
  ~PacketRingSource();
  PacketRingSource(const PacketRingSource&) = delete;
  PacketRingSource& operator=(const PacketRingSource&) = delete;

  // The Ingest poll(max) delivers to; set once, before the first poll().
  void attach(Ingest& ingest) noexcept { ingest_ = &ingest; }

  // ---- PacketSource ----
  int poll(int max) noexcept override;
  void wait(int timeout_ms) noexcept override { (void)wait_for_block(timeout_ms); }
  std::optional<uint64_t> nic_drops() const noexcept override { return stats().kernel_drops; }
  bool failed() const noexcept override { return failed_.load(std::memory_order_acquire); }
  std::string failure() const override { return failed() ? failure_ : std::string(); }
  SourceReport report() const override;

  // Delivers up to `max_frames` frames already in the ring, without waiting; how many.
  int poll(LendingSink& sink, int max_frames) noexcept;
  // Waits up to timeout_ms for a block; whether one is ready. Hands back released blocks
  // first, so a writer catching up frees the kernel's blocks even while nothing arrives.
  bool wait_for_block(int timeout_ms) noexcept;
  // PcapSource::dispatch's contract: poll, and when nothing was there, wait once and poll.
  int dispatch(LendingSink& sink, int max_frames) noexcept;
  int dispatch(Ingest& ingest, int max_frames) noexcept;  // the same, straight into an Ingest

  // Capture thread (PACKET_STATISTICS reads and clears the kernel's counters).
  pcap::SourceStats stats() const noexcept;
  ZeroCopyStats zero_copy_stats() const noexcept;
  // The ring the kernel was given: buffer_bytes rounded down to whole blocks.
  std::size_t ring_bytes() const noexcept { return map_bytes_; }
  bool is_live() const noexcept { return true; }
  const std::string& name() const noexcept { return name_; }
  uint32_t block_count() const noexcept { return block_count_; }

 private:
  struct Block {
    BlockLoans loans{0};
    int64_t opened_ns = 0;
    bool lent = false;
  };
  PacketRingSource(const RingOptions& options);
  void setup(const RingOptions& options);
  std::byte* block_base(uint32_t b) const noexcept { return map_ + std::size_t{b} * block_bytes_; }
  bool block_ready(uint32_t b) const noexcept;
  bool ready() const noexcept;  // a frame can be delivered now
  bool wait_holding(int timeout_ms) noexcept;
  bool open_block() noexcept;
  void close_block() noexcept;
  void hand_back() noexcept;
  bool may_lend(int64_t now_ns) const noexcept;
  template <class Sink>
  int poll_to(Sink& sink, int max_frames) noexcept;
  template <class Sink>
  void deliver(Sink& sink, tpacket3_hdr* h) noexcept;
  void set_failed(std::string why) noexcept;
  void publish() noexcept;  // the counters report() reads, once per poll

  std::string name_;
  int fd_ = -1;
  std::byte* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  uint32_t block_bytes_ = 0;
  uint32_t block_count_ = 0;
  std::unique_ptr<Block[]> blocks_;
  int timeout_ms_ = 100;
  bool zero_copy_ = true;
  uint32_t max_lent_ = 0;
  int64_t max_hold_ns_ = 0;

  uint32_t next_ = 0;    // next block to read
  uint32_t oldest_ = 0;  // oldest block not handed back
  uint32_t out_ = 0;     // blocks read and not handed back (the current one included)
  uint32_t lent_out_ = 0;
  bool in_block_ = false;
  bool lending_ = false;  // the current block's frames are lent
  bool stalled_ = false;
  uint32_t left_ = 0;  // frames of the current block not yet delivered
  tpacket3_hdr* frame_ = nullptr;
  uint32_t lends_ = 0;  // loans taken on the current block

  uint64_t frames_ = 0;
  uint64_t truncated_ = 0;
  ZeroCopyStats zc_;
  mutable uint64_t kernel_drops_ = 0;
  std::string failure_;  // written once, before failed_ is set
  std::atomic<bool> failed_{false};
  Ingest* ingest_ = nullptr;
  // Copies of the capture thread's counters for report() on other threads.
  common::RelaxedCounter pub_frames_, pub_truncated_, pub_lent_, pub_copied_, pub_stalls_;
};

}  // namespace rocecap::capture::packet
