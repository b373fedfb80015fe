// StreamRing: the fixed set of packet slots of one stream, handed between the capture thread
// (producer) and the writer thread (consumer). See doc/design.md, "Data path".
//
// A slot is a header slot in the host header slab, a payload slot in the payload slab (host or
// GPU memory) and a SlotMeta. Slot life: free -> taken by the producer (posted to the NIC as a
// receive work request, or filled by the pcap source) -> published (the writer owns it) ->
// released -> free again.
//
// Two single-producer single-consumer queues of slot ids carry the ownership:
//   ready: producer -> consumer, slots in the order the writer must write them;
//   free:  consumer -> producer, slots in the order the writer released them.
// Passing ids instead of requiring slots to move round the ring in one fixed order lets the
// Sequencer (sequencer.hpp) publish a late frame in its place in time, although the NIC
// filled its slot after the frames that follow it in time, and lets the verbs source re-post
// released slots in exactly the order they come back. All memory is allocated in the
// constructor; nothing after it allocates, locks or blocks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "capture/memory/host_memory.hpp"
#include "capture/memory/payload_memory.hpp"
#include "capture/release_mask.hpp"
#include "common/relaxed_counter.hpp"
#include "common/spsc_queue.hpp"

namespace rocecap::capture {

// Slots lent one piece of a transport's memory (a kernel ring block): the lender reuses that
// memory only once the count is back to zero (lend() below).
using BlockLoans = std::atomic<uint32_t>;

using SlotId = uint32_t;

// SlotMeta::flags bits.
enum SlotFlag : uint16_t {
  kSlotInvalidBit = 1u << 0,    // the CODIF invalid bit is set (frame kept, counted)
  kSlotLate = 1u << 1,          // arrived after later frames, placed back in time order
  kSlotSegmentStart = 1u << 2,  // first frame after start or a resync: no fill before it
  kSlotHwTimestamp = 1u << 3,   // timestamp_ns is NIC hardware time
};

// What the producer records about the packet in a slot. Written before publish, read after.
struct SlotMeta {
  uint64_t frame_index = 0;         // absolute CODIF frame index (codif::absolute_index)
  int64_t timestamp_ns = 0;         // receive time, Unix ns
  uint32_t wire_bytes = 0;          // whole Ethernet frame as received (FCS excluded)
  uint32_t header_bytes = 0;        // bytes of the frame in the header slot
  uint32_t payload_bytes = 0;       // bytes of the frame in the payload slot (after the split)
  uint16_t udp_payload_offset = 0;  // where the UDP payload (the CODIF frame) starts
  uint16_t flags = 0;               // SlotFlag bits
};

struct RingConfig {
  uint32_t slots = 4096;
  uint32_t header_slot_bytes = 128;  // the header/payload split size
  uint32_t payload_slot_bytes = 9000;
  uint32_t payload_align = 64;         // power of two; 4096 for direct I/O from the slab
  memory::HostMemoryOptions memory{};  // for the header slab and a host payload slab
};

// Counter snapshot. Producer and consumer counters are written by one thread each.
struct RingStats {
  uint64_t taken = 0;            // slots the producer took from the free queue
  uint64_t published = 0;        // slots handed to the consumer
  uint64_t returned = 0;         // slots the producer gave back unpublished
  uint64_t ring_full_drops = 0;  // acquire() found no free slot: the packet is lost
  uint64_t consumed = 0;         // slots the consumer popped
  uint64_t released = 0;         // slots the consumer released
  uint64_t dump_pinned_drops =
      0;  // ring-full drops while a dump's pins held slots (capture/retention.hpp)
  uint64_t consumer_pinned_drops = 0;  // ... while a hold-mode consumer's pin held slots
};

class StreamRing {
 public:
  static constexpr uint32_t kHeaderAlign = 64;
  static constexpr uint32_t kMaxSlots = 1u << 24;

  // Allocates everything. `payload`, when given (GPU memory, say), must hold
  // payload_bytes_needed(config) bytes aligned to config.payload_align; without it the
  // payload slab is memory::HostMemory. Throws std::invalid_argument naming the bad field.
  explicit StreamRing(const RingConfig& config,
                      std::unique_ptr<memory::PayloadMemory> payload = nullptr);

  static std::size_t header_stride(const RingConfig& c) noexcept;
  static std::size_t payload_stride(const RingConfig& c) noexcept;
  static std::size_t payload_bytes_needed(const RingConfig& c) noexcept;

  // ---- producer (capture thread) ----
  // A free slot for the next packet; counts a ring-full drop when there is none (pcap path).
  std::optional<SlotId> acquire() noexcept;
  // Up to out.size() free slots in the order they were freed, without counting drops: the
  // verbs source posts them as receive work requests (wr_id = slot id).
  std::size_t take_free(std::span<SlotId> out) noexcept;
  // Whether take_free() would hand out a slot now. Inline and cheap: the verbs source asks it
  // of every ring its ReleaseMask names after a poll, until the ring has none left.
  bool has_free() noexcept { return stash_size_ > 0 || free_.readable(); }
  // Start-up, before the threads run: from now on release() and give_back() mark `index` in
  // `mask` when slots come back, so the verbs source visits only the rings that have some
  // (release_mask.hpp). Shared: the mask lives as long as the last ring or source using it.
  void set_release_mask(std::shared_ptr<ReleaseMask> mask, uint32_t index) noexcept {
    release_mask_ = std::move(mask);
    release_index_ = index;
  }
  // A taken slot that will not be published (parse error, duplicate, dropped late frame):
  // it is the next one acquire()/take_free() hands out again.
  void give_back(SlotId id) noexcept;
  // Hands a filled slot, whose meta() is written, to the consumer. Inline: per packet.
  void publish(SlotId id) noexcept {
    ready_.push(id);  // cannot be full: it holds at most slots_ of slots_ ids
    prod_.published.add();
  }
  // Slots acquire() can hand out now, at least (the consumer may have released more since):
  // lets a file replay wait for the writer instead of dropping frames.
  uint32_t free_slots() const noexcept;

  // ---- consumer (writer thread) ----
  // Published slots in publication order; how many were popped.
  std::size_t pop(std::span<SlotId> out) noexcept;
  bool pop(SlotId& out) noexcept { return pop(std::span<SlotId>(&out, 1)) == 1; }
  void release(SlotId id) noexcept { release(std::span<const SlotId>(&id, 1)); }
  void release(std::span<const SlotId> ids) noexcept;

  // ---- slot access (the thread that owns the slot) ----
  std::span<std::byte> header(SlotId id) const noexcept {
    return {header_base_ + std::size_t{id} * header_stride_, header_stride_};
  }
  // GPU memory when payload_kind() == gpu: then only the device may dereference it.
  // A lent slot's payload is the lender's memory (lend() below).
  std::span<std::byte> payload(SlotId id) const noexcept {
    if (loans_ && loans_[id].bytes != nullptr) return {loans_[id].bytes, payload_stride_};
    return {payload_base_ + std::size_t{id} * payload_stride_, payload_stride_};
  }

  // ---- loans: a slot's payload left where a zero-copy source received it ----
  // Start-up, before the threads run: makes lend() usable (one pointer pair per slot). Host
  // payload memory only (a lent payload is read by host code, and take_home() copies into the
  // slab with memcpy): throws std::logic_error on a GPU ring.
  void enable_loans();
  // Producer, on a taken slot: until the slot is released (consumer) or given back
  // (producer), payload(id) is `bytes`, which the lender keeps valid while `loans` is not
  // zero; ending the loan decrements `loans` (release order: the consumer's reads of `bytes`
  // happen before). capture/packet/packet_ring_source.hpp lends kernel ring blocks this way.
  void lend(SlotId id, std::byte* bytes, BlockLoans& loans) noexcept {
    loans_[id] = Loan{bytes, &loans};
  }
  bool loans_enabled() const noexcept { return loans_ != nullptr; }
  // Consumer, on slots it keeps beyond the lending bound (capture/retention.hpp keeps them for
  // seconds): each lent slot's payload is copied into its own payload slot and its loan ended,
  // so the lender's block goes back at once instead of when the slot is released. Without it
  // retained slots held the kernel ring's blocks until the ring was full of them and capture
  // stopped. The payload slab has a slot for every id, and is host memory wherever slots are
  // lent (enable_loans), so the copy is a memcpy of the frame's payload_bytes.
  void take_home(std::span<const SlotId> ids) noexcept;
  SlotMeta& meta(SlotId id) noexcept { return meta_[id]; }
  const SlotMeta& meta(SlotId id) const noexcept { return meta_[id]; }

  uint32_t slots() const noexcept { return slots_; }
  std::size_t header_stride() const noexcept { return header_stride_; }
  std::size_t payload_stride() const noexcept { return payload_stride_; }
  memory::MemoryKind payload_kind() const noexcept { return payload_->kind(); }
  const memory::HostMemory& header_memory() const noexcept { return *header_mem_; }
  const memory::PayloadMemory& payload_memory() const noexcept { return *payload_; }

  RingStats stats() const noexcept;  // any thread

  // Consumer: pins of a triggered dump hold slots beyond the retention (capture/retention.hpp),
  // so a packet that finds no free slot meanwhile is counted as dump_pinned, not ring_full.
  void set_pinned(bool on) noexcept { pinned_.store(on, std::memory_order_relaxed); }
  // The same while a hold-mode consumer's pin holds slots (doc/consumers.md): consumer_pinned.
  void set_consumer_pinned(bool on) noexcept {
    consumer_pinned_.store(on, std::memory_order_relaxed);
  }

  // Consumers (doc/consumers.md), start-up: one generation per slot in memory consumers map
  // read-only. take_free()/acquire() bump a slot's generation before the producer writes into
  // it, so a consumer that finds the generation it was told unchanged after reading a slot
  // knows no newer packet was written into it meanwhile (a sequence lock across processes).
  // Until the producer takes it again a released slot keeps its bytes, so consumers read
  // slots the writer has already released (the free queue is FIFO) and those retention keeps.
  void set_generations(std::atomic<uint64_t>* generations) noexcept { gens_ = generations; }
  uint64_t generation(SlotId id) const noexcept {
    return gens_ != nullptr ? gens_[id].load(std::memory_order_relaxed) : 0;
  }

 private:
  struct alignas(common::kCacheLine) ProducerCounters {
    common::RelaxedCounter taken, published, returned, ring_full_drops, dump_pinned_drops,
        consumer_pinned_drops;
  };
  struct alignas(common::kCacheLine) ConsumerCounters {
    common::RelaxedCounter consumed, released;
  };

  uint32_t slots_;
  std::size_t header_stride_;
  std::size_t payload_stride_;
  std::unique_ptr<memory::HostMemory> header_mem_;
  std::unique_ptr<memory::PayloadMemory> payload_;
  std::byte* header_base_;
  std::byte* payload_base_;
  std::unique_ptr<SlotMeta[]> meta_;
  struct Loan {
    std::byte* bytes = nullptr;
    std::atomic<uint32_t>* count = nullptr;
  };
  void bump_generations(std::span<const SlotId> ids) noexcept;
  void end_loan(SlotId id) noexcept {
    Loan& l = loans_[id];
    if (l.count == nullptr) return;
    l.bytes = nullptr;
    l.count->fetch_sub(1, std::memory_order_release);
    l.count = nullptr;
  }
  std::unique_ptr<Loan[]> loans_;  // null until enable_loans()
  common::SpscQueue<SlotId> ready_;
  common::SpscQueue<SlotId> free_;
  // Slots given back by the producer: its own stack, handed out before the free queue.
  std::unique_ptr<SlotId[]> stash_;
  uint32_t stash_size_ = 0;
  ProducerCounters prod_;
  std::atomic<bool> pinned_{false};  // read only when acquire() finds no slot
  std::atomic<bool> consumer_pinned_{false};
  std::atomic<uint64_t>* gens_ = nullptr;
  std::shared_ptr<ReleaseMask> release_mask_;  // null: nobody asks (pcap, tests)
  uint32_t release_index_ = 0;
  ConsumerCounters cons_;
};

}  // namespace rocecap::capture
