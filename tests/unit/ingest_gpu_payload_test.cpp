// A GPU payload slot must never be read by the CPU. The payload slab here is PROT_NONE host
// memory reported as kind gpu: any CPU access faults, so a test that finishes shows the ingest
// parsed the header slot alone. With host memory the same short split is joined and parsed.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <memory>
#include <numeric>

#include "capture/ingest.hpp"
#include "test_frames.hpp"

namespace rocecap::capture {
namespace {

class NoAccessGpuSlab final : public memory::PayloadMemory {
 public:
  explicit NoAccessGpuSlab(std::size_t bytes) : size_(bytes) {
    void* p = mmap(nullptr, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap");
    data_ = static_cast<std::byte*>(p);
  }
  ~NoAccessGpuSlab() override { munmap(data_, size_); }
  NoAccessGpuSlab(const NoAccessGpuSlab&) = delete;
  NoAccessGpuSlab& operator=(const NoAccessGpuSlab&) = delete;
  std::byte* data() const noexcept override { return data_; }
  std::size_t size() const noexcept override { return size_; }
  memory::MemoryKind kind() const noexcept override { return memory::MemoryKind::gpu; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_;
};

StreamSpec spec(StreamFormat format) {
  StreamSpec s;
  s.key = {test::kGroup, test::kPort, test::kSrcA};
  s.format = format;
  s.ring.slots = 8;
  s.ring.header_slot_bytes = 64;  // Ethernet + IPv4 + UDP fit; the CODIF header does not
  s.ring.payload_slot_bytes = 2048;
  s.ring.memory.huge_pages = memory::Want::no;
  s.ring.memory.lock = memory::Want::no;
  s.sequencer.reorder_window = 1;
  return s;
}

// What the NIC does: SGE0 gets the first `split` bytes; SGE1 (the payload) is not written here.
SlotId deliver_header(StreamPipeline& sp, const std::vector<std::byte>& f) {
  SlotId id = 0;
  EXPECT_EQ(sp.ring().take_free(std::span<SlotId>(&id, 1)), 1u);
  std::memcpy(sp.ring().header(id).data(), f.data(), sp.split());
  return id;
}

TEST(IngestGpuPayload, UdpStreamIsPlacedFromTheHeaderSlotAlone) {
  const StreamSpec s = spec(StreamFormat::udp);
  StreamPipeline sp(s, std::make_unique<NoAccessGpuSlab>(StreamRing::payload_bytes_needed(s.ring)));
  Ingest ingest({&sp}, false);
  const auto f = test::frame(test::kSrcA, 5);
  const SlotId id = deliver_header(sp, f);
  ingest.on_slot(0, id, static_cast<uint32_t>(f.size()), 7, 0);
  SlotId out = 0;
  ASSERT_TRUE(sp.ring().pop(out));
  EXPECT_EQ(out, id);
  EXPECT_EQ(sp.ring().meta(out).wire_bytes, f.size());
  EXPECT_EQ(sp.ring().meta(out).header_bytes, 64u);
  EXPECT_EQ(sp.ring().meta(out).payload_bytes, f.size() - 64);
}

TEST(IngestGpuPayload, CodifHeaderOutsideTheHeaderSlotIsRejectedNotRead) {
  const StreamSpec s = spec(StreamFormat::codif);
  StreamPipeline sp(s, std::make_unique<NoAccessGpuSlab>(StreamRing::payload_bytes_needed(s.ring)));
  Ingest ingest({&sp}, false);
  const auto f = test::frame(test::kSrcA, 5);
  ingest.on_slot(0, deliver_header(sp, f), static_cast<uint32_t>(f.size()), 7, 0);
  SlotId out = 0;
  EXPECT_FALSE(sp.ring().pop(out));
  uint64_t rejected = 0;
  for (std::size_t r = 0; r < kRejectReasonCount; ++r)
    rejected += ingest.rejected(r);
  EXPECT_EQ(rejected, 1u);
  EXPECT_EQ(sp.ring().free_slots(), s.ring.slots);  // the slot came back for re-posting
}

TEST(IngestGpuPayload, HostPayloadWithTheSameSplitIsJoinedAndPlaced) {
  const StreamSpec s = spec(StreamFormat::codif);
  StreamPipeline sp(s);
  Ingest ingest({&sp}, false);
  const auto f = test::frame(test::kSrcA, 5);
  const SlotId id = deliver_header(sp, f);
  std::memcpy(sp.ring().payload(id).data(), f.data() + 64, f.size() - 64);
  ingest.on_slot(0, id, static_cast<uint32_t>(f.size()), 7, 0);
  ingest.flush_idle(1);
  SlotId out = 0;
  ASSERT_TRUE(sp.ring().pop(out));
  EXPECT_EQ(sp.ring().meta(out).wire_bytes, f.size());
}

}  // namespace
}  // namespace rocecap::capture
