// PacketRingSource (capture/packet/) against a TAP device in a network namespace of its own:
// frames written to the TAP arrive on it as received frames, as from a NIC. Needs root (the
// namespace and the TAP); SKIPPED otherwise. The lending mechanism of StreamRing and Ingest
// is tested without the kernel first.
#include "capture/packet/packet_ring_source.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capture/ingest.hpp"
#include "config/packet_ring_geometry.hpp"
#include "test_frames.hpp"

namespace rocecap::capture::packet {
namespace {

using test::frame;
using test::kGroup;
using test::kPayload;
using test::kPort;
using test::kSrcA;

StreamSpec spec(uint32_t src, uint32_t slots) {
  StreamSpec s;
  s.key = {kGroup, kPort, src};
  s.ring.slots = slots;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = kPayload;
  s.ring.memory.huge_pages = memory::Want::no;
  s.ring.memory.lock = memory::Want::no;
  s.sequencer.reorder_window = 1;
  return s;
}

bool inside_slab(const StreamRing& r, const std::byte* p) {
  const auto* base = static_cast<const std::byte*>(r.payload_memory().data());
  return p >= base && p < base + r.payload_memory().size();
}

// ---- the lending mechanism, no kernel involved ----

TEST(Lending, ALentFrameIsPlacedLikeACopiedOneAndItsLoanEndsOnRelease) {
  StreamPipeline copied{spec(kSrcA, 16)}, lent{spec(kSrcA, 16)};
  lent.ring().enable_loans();
  Ingest ci{{&copied}, false}, li{{&lent}, false};
  BlockLoans loans{0};
  std::vector<std::byte> f = frame(kSrcA, 7);
  ci.on_frame(f, f.size(), 123);
  ASSERT_TRUE(li.on_frame_lent(f, f.size(), 123, loans));
  loans.fetch_add(1);  // the source's own count of the loan it was told about
  copied.sequencer().flush();
  lent.sequencer().flush();
  SlotId c = 0, l = 0;
  ASSERT_TRUE(copied.ring().pop(c));
  ASSERT_TRUE(lent.ring().pop(l));
  const SlotMeta& mc = copied.ring().meta(c);
  const SlotMeta& ml = lent.ring().meta(l);
  EXPECT_EQ(mc.frame_index, ml.frame_index);
  EXPECT_EQ(mc.wire_bytes, ml.wire_bytes);
  EXPECT_EQ(mc.header_bytes, ml.header_bytes);
  EXPECT_EQ(mc.payload_bytes, ml.payload_bytes);
  EXPECT_EQ(0, std::memcmp(copied.ring().header(c).data(), lent.ring().header(l).data(),
                           mc.header_bytes));
  // The lent payload is the frame itself, not a copy in the slab.
  EXPECT_EQ(lent.ring().payload(l).data(), f.data() + 128);
  EXPECT_TRUE(inside_slab(copied.ring(), copied.ring().payload(c).data()));
  EXPECT_EQ(0, std::memcmp(copied.ring().payload(c).data(), lent.ring().payload(l).data(),
                           mc.payload_bytes));
  EXPECT_EQ(loans.load(), 1u);
  lent.ring().release(l);
  EXPECT_EQ(loans.load(), 0u);
  // The slot is the ring's own again: a later copy goes to the slab.
  EXPECT_TRUE(inside_slab(lent.ring(), lent.ring().payload(l).data()));
}

TEST(Lending, ADuplicateGivesItsLoanBackAndARingWithoutLoansCopies) {
  StreamPipeline lent{spec(kSrcA, 16)}, plain{spec(kSrcA, 16)};
  lent.ring().enable_loans();
  Ingest li{{&lent}, false}, pi{{&plain}, false};
  BlockLoans loans{0};
  std::vector<std::byte> f = frame(kSrcA, 3);
  ASSERT_TRUE(li.on_frame_lent(f, f.size(), 1, loans));
  loans.fetch_add(1);
  ASSERT_TRUE(li.on_frame_lent(f, f.size(), 2, loans));  // the same frame again: a duplicate
  loans.fetch_add(1);
  EXPECT_EQ(loans.load(), 1u);  // the duplicate's slot was given back, its loan with it
  EXPECT_FALSE(pi.on_frame_lent(f, f.size(), 1, loans));
  EXPECT_EQ(loans.load(), 1u);
}

// ---- the kernel ring, on a TAP device ----

class Tap {
 public:
  // In a fresh network namespace of this process; `ok()` false (with why) where not possible.
  Tap() {
    if (geteuid() != 0) {
      why_ = "needs root";
      return;
    }
    if (unshare(CLONE_NEWNET) != 0) {
      why_ = std::string("unshare(CLONE_NEWNET): ") + std::strerror(errno);
      return;
    }
    fd_ = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
    if (fd_ < 0) {
      why_ = std::string("/dev/net/tun: ") + std::strerror(errno);
      return;
    }
    ifreq ifr{};
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    std::strncpy(ifr.ifr_name, "kptap0", IFNAMSIZ - 1);
    if (ioctl(fd_, TUNSETIFF, &ifr) != 0) {
      why_ = std::string("TUNSETIFF: ") + std::strerror(errno);
      return;
    }
    const int s = socket(AF_INET, SOCK_DGRAM, 0);
    ifr.ifr_flags = IFF_UP;
    const bool up = ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
    close(s);
    if (!up) {
      why_ = "could not bring kptap0 up";
      return;
    }
    ok_ = true;
  }
  ~Tap() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }
  void send(const std::vector<std::byte>& f) const {
    ASSERT_EQ(write(fd_, f.data(), f.size()), static_cast<ssize_t>(f.size()));
  }

 private:
  int fd_ = -1;
  bool ok_ = false;
  std::string why_;
};

RingOptions options(uint32_t blocks, bool zero_copy) {
  RingOptions o;
  o.interface = "kptap0";
  o.groups = {{kGroup, kPort}};
  o.block_bytes = 64 << 10;
  o.buffer_bytes = std::size_t{blocks} * o.block_bytes;
  o.block_timeout_ms = 1;
  o.timeout_ms = 20;
  o.zero_copy = zero_copy;
  return o;
}

// Copies every frame out; never lends.
struct Recorder final : LendingSink {
  std::vector<std::vector<std::byte>> frames;
  std::vector<std::size_t> wire;
  void on_frame(std::span<const std::byte> c, std::size_t w, int64_t) noexcept override {
    frames.emplace_back(c.begin(), c.end());
    wire.push_back(w);
  }
  bool on_frame_lent(std::span<const std::byte> c, std::size_t w, int64_t t,
                     BlockLoans&) noexcept override {
    on_frame(c, w, t);
    return false;
  }
};

// Polls until `want` frames came or 2 s passed; how many.
template <class Sink>
std::size_t collect(PacketRingSource& src, Sink& sink, std::size_t want) {
  std::size_t got = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (got < want && std::chrono::steady_clock::now() < until)
    got += static_cast<std::size_t>(src.dispatch(sink, 256));
  return got;
}

std::vector<std::byte> tagged(std::vector<std::byte> f, uint16_t tci) {
  const std::byte tag[4] = {std::byte{0x81}, std::byte{0x00}, std::byte(tci >> 8),
                            std::byte(tci & 0xff)};
  f.insert(f.begin() + 12, tag, tag + 4);
  return f;
}

TEST(PacketRing, DeliversWhatTheFilterPassesByteForByteWithVlanTagsPutBack) {
  Tap tap;
  if (!tap.ok()) GTEST_SKIP() << tap.why();
  auto src = PacketRingSource::open(options(8, false));
  const std::vector<std::byte> plain = frame(kSrcA, 1);
  const std::vector<std::byte> vlan = tagged(frame(kSrcA, 2), 0x0123);
  const std::vector<std::byte> other = frame(kSrcA, 3, capture::codif::kSyncV3, kGroup + 1);
  tap.send(plain);
  tap.send(other);  // another group: the filter drops it
  tap.send(vlan);
  Recorder r;
  EXPECT_EQ(collect(*src, r, 2), 2u);
  ASSERT_EQ(r.frames.size(), 2u);
  EXPECT_EQ(r.frames[0], plain);
  EXPECT_EQ(r.frames[1], vlan);  // the kernel stripped the tag; it is back in place
  EXPECT_EQ(r.wire[1], vlan.size());
  EXPECT_EQ(src->stats().frames, 2u);
  EXPECT_EQ(src->stats().kernel_drops, 0u);
}

TEST(PacketRing, ZeroCopySlotsPointIntoTheKernelBlockUntilTheWriterReleasesThem) {
  Tap tap;
  if (!tap.ok()) GTEST_SKIP() << tap.why();
  StreamPipeline sp{spec(kSrcA, 64)};
  sp.ring().enable_loans();
  Ingest ingest{{&sp}, false};
  auto src = PacketRingSource::open(options(8, true));
  std::vector<std::vector<std::byte>> sent;
  for (uint64_t i = 0; i < 20; ++i) {
    sent.push_back(frame(kSrcA, i));
    tap.send(sent.back());
  }
  ASSERT_EQ(collect(*src, ingest, 20), 20u);
  sp.sequencer().flush();
  EXPECT_EQ(src->zero_copy_stats().lent_frames, 20u);
  EXPECT_EQ(src->zero_copy_stats().copied_frames, 0u);
  std::vector<SlotId> ids;
  SlotId id;
  while (sp.ring().pop(id)) {
    const SlotMeta& m = sp.ring().meta(id);
    const auto& f = sent[ids.size()];
    EXPECT_FALSE(inside_slab(sp.ring(), sp.ring().payload(id).data()));
    EXPECT_EQ(0, std::memcmp(sp.ring().header(id).data(), f.data(), m.header_bytes));
    EXPECT_EQ(
        0, std::memcmp(sp.ring().payload(id).data(), f.data() + m.header_bytes, m.payload_bytes));
    ids.push_back(id);
  }
  ASSERT_EQ(ids.size(), 20u);
  EXPECT_GE(src->zero_copy_stats().blocks_out, 1u);  // held for the unwritten frames
  sp.ring().release(ids);
  src->wait(0);  // hands released blocks back
  EXPECT_EQ(src->zero_copy_stats().blocks_out, 0u);
}

TEST(PacketRing, HeldBlocksFallBackToCopyingAndAStalledRingIsCountedNeverSilent) {
  Tap tap;
  if (!tap.ok()) GTEST_SKIP() << tap.why();
  StreamPipeline sp{spec(kSrcA, 4096)};
  sp.ring().enable_loans();
  Ingest ingest{{&sp}, false};
  RingOptions o = options(4, true);
  o.max_lent_blocks = 2;
  auto src = PacketRingSource::open(o);
  // The writer is frozen: nothing is released. 50 frames of 1130 bytes fill most of a 64 KiB
  // block; rounds far apart enough that each is its own block (1 ms block timeout).
  uint64_t sent = 0;
  for (int round = 0; round < 8; ++round) {
    for (int i = 0; i < 50; ++i)
      tap.send(frame(kSrcA, sent++));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (src->dispatch(ingest, 256) > 0) {
    }
  }
  const ZeroCopyStats z = src->zero_copy_stats();
  const pcap::SourceStats s = src->stats();
  EXPECT_GT(z.lent_frames, 0u);
  EXPECT_GT(z.copied_frames, 0u);              // lending stopped at 2 held blocks
  EXPECT_GE(z.held_block_stalls, 1u);          // then all 4 were out
  EXPECT_GT(s.kernel_drops, 0u);               // and the kernel dropped, counted
  EXPECT_EQ(s.frames + s.kernel_drops, sent);  // every frame delivered or counted
  EXPECT_EQ(z.lent_frames + z.copied_frames, s.frames);
  // The writer thaws: the blocks go back and capture resumes.
  sp.sequencer().flush();
  std::vector<SlotId> ids(4096);
  const std::size_t n = sp.ring().pop(ids);
  sp.ring().release(std::span<const SlotId>(ids.data(), n));
  src->wait(0);
  EXPECT_EQ(src->zero_copy_stats().blocks_out, 0u);
  tap.send(frame(kSrcA, sent++));
  EXPECT_EQ(collect(*src, ingest, 1), 1u);
}

// ---- the ring's size (config/packet_ring_geometry.hpp) ----

TEST(PacketRingGeometry, TheRingHoldsEveryLendableSlotAndNeverShrinksBelowTheFloor) {
  // Frames of up to max_frame 9216 B: align8(86 + 9216) = 9304 B, 112 per 1 MiB block.
  EXPECT_EQ(config::packet_ring_frame_bytes(9216), 9304u);
  EXPECT_EQ(config::packet_ring_frame_bytes(1130), 1216u);
  // 6 streams x 4096 slots fit the 256 MiB floor (220 blocks); 6 x 8192 need 439 + 2 blocks.
  EXPECT_EQ(config::packet_ring_bytes(6 * 4096, 9216), uint64_t{256} << 20);
  EXPECT_EQ(config::packet_ring_bytes(6 * 8192, 9216), uint64_t{441} << 20);
  EXPECT_EQ(config::packet_ring_bytes(0, 9216), uint64_t{256} << 20);
  // Without a floor: 200 frames of 1130 B in 64 KiB blocks (53 each) are 4 blocks, plus 2.
  EXPECT_EQ(config::packet_ring_bytes(200, 1130, 64 << 10, 0), uint64_t{6} * (64 << 10));
}

// Where each frame lies in its block, without lending it.
struct Where final : LendingSink {
  std::vector<const std::byte*> at;
  void on_frame(std::span<const std::byte>, std::size_t, int64_t) noexcept override {}
  bool on_frame_lent(std::span<const std::byte> c, std::size_t, int64_t,
                     BlockLoans&) noexcept override {
    at.push_back(c.data());
    return false;
  }
};

// The arithmetic's frame layout is the kernel's: consecutive frames of one block lie
// packet_ring_frame_bytes apart (tp_next_offset). 1133-byte frames tell a lead of 86 bytes
// (1224 apart) from one without PACKET_RESERVE's 4 (1216), and 8-byte alignment from 16 (1232).
TEST(PacketRing, FramesLieInTheBlockAsTheRingGeometrySays) {
  Tap tap;
  if (!tap.ok()) GTEST_SKIP() << tap.why();
  RingOptions o = options(8, true);
  o.block_timeout_ms = 200;  // the burst stays in one block
  auto src = PacketRingSource::open(o);
  std::vector<std::byte> f = frame(kSrcA, 0);
  f.resize(f.size() + 3);  // Ethernet padding after the IP datagram: the filter still passes it
  for (int i = 0; i < 20; ++i)
    tap.send(f);
  Where w;
  ASSERT_EQ(collect(*src, w, 20), 20u);
  EXPECT_EQ(src->zero_copy_stats().blocks, 1u);
  ASSERT_EQ(w.at.size(), 20u);
  EXPECT_EQ(config::packet_ring_frame_bytes(f.size()), 1224u);
  for (std::size_t i = 1; i < w.at.size(); ++i) {
    EXPECT_EQ(static_cast<uint64_t>(w.at[i] - w.at[i - 1]),
              config::packet_ring_frame_bytes(f.size()))
        << i;
  }
}

struct FrozenRun {
  uint64_t sent = 0, delivered = 0, kernel_drops = 0, ring_full = 0, in_ring = 0;
};

// `frames` frames in bursts of 50 into a ring of `slots` slots whose writer never releases.
FrozenRun run_frozen(const Tap& tap, uint32_t slots, std::size_t ring_bytes, uint64_t frames) {
  StreamPipeline sp{spec(kSrcA, slots)};
  sp.ring().enable_loans();
  Ingest ingest{{&sp}, false};
  RingOptions o = options(0, true);
  o.buffer_bytes = ring_bytes;
  o.block_timeout_ms = 100;  // bursts fill whole blocks, as a fast stream does
  auto src = PacketRingSource::open(o);
  FrozenRun r;
  while (r.sent < frames) {
    for (int i = 0; i < 50 && r.sent < frames; ++i)
      tap.send(frame(kSrcA, r.sent++));
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    while (std::chrono::steady_clock::now() < until)
      src->dispatch(ingest, 256);
  }
  sp.sequencer().flush();
  r.delivered = src->stats().frames;
  r.kernel_drops = src->stats().kernel_drops;
  r.ring_full = sp.ring().stats().ring_full_drops;
  std::vector<SlotId> ids(slots);
  r.in_ring = sp.ring().pop(ids);
  sp.ring().release(std::span<const SlotId>(ids.data(), r.in_ring));
  return r;
}

// A writer frozen in front of a ring sized by packet_ring_bytes: every frame the stream ring
// can take reaches it, and the rest are ring-full drops, not kernel drops. The same frames into
// a ring of half that size: the kernel drops while ring slots are still free.
TEST(PacketRing, ARingSizedForTheSlotsLetsTheStreamRingBoundAFrozenWriter) {
  Tap tap;
  if (!tap.ok()) GTEST_SKIP() << tap.why();
  const std::size_t sized = config::packet_ring_bytes(200, 1130, 64 << 10, 0);  // 6 blocks
  const FrozenRun r = run_frozen(tap, 200, sized, 250);
  EXPECT_EQ(r.kernel_drops, 0u);
  EXPECT_EQ(r.delivered, 250u);
  EXPECT_EQ(r.in_ring, 200u);
  EXPECT_EQ(r.ring_full, 50u);
  const FrozenRun small = run_frozen(tap, 200, sized / 2, 250);
  EXPECT_GT(small.kernel_drops, 0u);
  EXPECT_LT(small.in_ring, 200u);
  EXPECT_EQ(small.delivered + small.kernel_drops, 250u);
}

}  // namespace
}  // namespace rocecap::capture::packet
