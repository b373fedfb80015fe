// CODIF decode/validate/encode/timing and the FrameIndexer fast path on arbitrary UDP payloads.
// Input: the UDP payload (64-byte header + data array).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "capture/codif/frame_indexer.hpp"
#include "capture/codif/header.hpp"
#include "fuzz_check.hpp"

namespace codif = rocecap::capture::codif;

namespace {

codif::SyncSet syncs(codif::Layout adeadbee) {
  codif::SyncSet s = codif::SyncSet::defaults();
  s.add(codif::kSyncAdeadbee, adeadbee);
  return s;
}

void check_timing(const codif::Header& h, const codif::Timing& t, uint64_t n) {
  const uint64_t idx = codif::absolute_index(h, t);
  FUZZ_CHECK(codif::at_index(h, t, idx) == h);
  FUZZ_CHECK(codif::advance(h, t, 0) == h);
  // Only while the advanced seconds still fit the 32-bit field.
  const unsigned __int128 secs =
      static_cast<unsigned __int128>((idx + n) / t.frames_per_period) * t.period +
      h.seconds % t.period;
  if (idx + n >= idx && secs <= UINT32_MAX) {
    const codif::Header a = codif::advance(h, t, n);
    FUZZ_CHECK(codif::absolute_index(a, t) == idx + n);
    FUZZ_CHECK(a.frame < t.frames_per_period);
    FUZZ_CHECK(a.seconds % t.period == h.seconds % t.period);
    FUZZ_CHECK(codif::frame_start_unix_ns(a, t) >= codif::frame_start_unix_ns(h, t));
  }
}

// A packet the fast path accepts must be one the slow path accepts, with the same index.
void check_indexer(const codif::FrameIndexer& learned, const codif::SyncSet& set,
                   const std::byte* data, std::size_t size) {
  auto copy = std::make_unique<std::byte[]>(size);
  std::memcpy(copy.get(), data, size);
  const codif::Header& ref = learned.header();
  for (std::size_t bit = 0; bit < codif::kHeaderBytes * 8; ++bit) {
    copy[bit / 8] ^= std::byte{static_cast<uint8_t>(1u << (bit % 8))};
    codif::FrameIndexer ix = learned;
    codif::FrameIndexer::Result r;
    if (ix.index({copy.get(), size}, r) == codif::FrameIndexer::Status::ok) {
      codif::Header h;
      codif::Timing t;
      FUZZ_CHECK(codif::decode(std::span<const std::byte>(copy.get(), size), set, h));
      // A header matching two configured syncs at once decodes by set order (documented).
      if (h.layout == ref.layout && h.sync == ref.sync) {
        FUZZ_CHECK(codif::validate(h, size, t) == codif::Invalid::ok);
        FUZZ_CHECK(codif::absolute_index(h, t) == r.index);
        FUZZ_CHECK(h.invalid == r.invalid);
      }
    }
    copy[bit / 8] ^= std::byte{static_cast<uint8_t>(1u << (bit % 8))};
  }
}

void one(const std::byte* data, std::size_t size, const codif::SyncSet& set) {
  codif::Header h;
  if (!codif::decode(std::span<const std::byte>(data, size), set, h)) return;
  codif::Timing t;
  const codif::Invalid v = codif::validate(h, size, t);
  FUZZ_CHECK(codif::to_string(v) != "unknown");
  if (v != codif::Invalid::ok) return;
  FUZZ_CHECK(t.frames_per_period >= 1 && t.frames_per_period <= (uint64_t{1} << 32));
  FUZZ_CHECK(t.samples_per_frame * t.frames_per_period == h.total_samples);

  std::array<std::byte, codif::kHeaderBytes> again{};
  codif::encode(h, again);
  codif::Header d;
  FUZZ_CHECK(codif::decode(again, set, d));
  FUZZ_CHECK(d == h);

  uint64_t n = 0;
  std::memcpy(&n, data, sizeof n);  // frame and seconds words double as a step count
  check_timing(h, t, n % (uint64_t{1} << 40));

  codif::FrameIndexer ix;
  ix.learn(h, t);
  codif::FrameIndexer::Result r;
  FUZZ_CHECK(ix.index({data, size}, r) == codif::FrameIndexer::Status::ok);
  FUZZ_CHECK(r.index == codif::absolute_index(h, t));
  FUZZ_CHECK(r.invalid == h.invalid);
  // Split packet: only the first kReadBytes readable (exactly sized for AddressSanitizer).
  auto head = std::make_unique<std::byte[]>(codif::FrameIndexer::kReadBytes);
  std::memcpy(head.get(), data, codif::FrameIndexer::kReadBytes);
  codif::FrameIndexer::Result split;
  FUZZ_CHECK(ix.index({head.get(), codif::FrameIndexer::kReadBytes}, size, split) ==
             codif::FrameIndexer::Status::ok);
  FUZZ_CHECK(split.index == r.index);
  check_indexer(ix, set, data, size);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  // Exactly-sized copy, so that AddressSanitizer sees any read past the payload.
  auto copy = std::make_unique<std::byte[]>(size);
  if (size != 0) std::memcpy(copy.get(), data, size);
  one(copy.get(), size, syncs(codif::Layout::v3));
  one(copy.get(), size, syncs(codif::Layout::v1));
  return 0;
}
