#include "capture/codif/frame_indexer.hpp"

namespace rocecap::capture::codif {
namespace {

// Bits that must stay constant within a stream, per layout (doc/codif.md). Left out: frame and
// seconds (checked separately), the invalid and cal flags (may change frame to frame), bits no
// layout documents, and the instrument-specific metadata.
constexpr std::array<uint64_t, 6> kMaskV3 = {
    0,                       // W0: frame, seconds
    0xFFFF'0000'FFF5'FFFFu,  // W1: all documented fields but invalid (17) and cal (19)
    ~uint64_t{0},            // W2: thread, group, secondary, station
    ~uint64_t{0},            // W3: nchan, block length, data array length
    ~uint64_t{0},            // W4: total samples
    0x0000'0000'FFFF'FFFFu,  // W5: sync
};
constexpr std::array<uint64_t, 6> kMaskV1 = {
    uint64_t{1} << 62,       // W0: complex (frame, seconds and invalid vary)
    0xFFFF'FFFF'FFC0'FFFFu,  // W1: station, representation, epoch, length, nbits, version
    ~uint64_t{0},            // W2: group, thread, nchan - 1, block length
    0x0000'FFFF'0000'0000u,  // W3: period
    ~uint64_t{0},            // W4: total samples
    0xFFFF'FFFF'0000'0000u,  // W5: sync
};

}  // namespace

Invalid FrameIndexer::learn(std::span<const std::byte> head, std::size_t udp_payload_bytes,
                            const SyncSet& syncs) noexcept {
  Header h;
  if (!decode(head, syncs, h)) return Invalid::bad_sync;
  Timing t;
  const Invalid v = validate(h, udp_payload_bytes, t);
  if (v == Invalid::ok) learn(h, t);
  return v;
}

void FrameIndexer::learn(const Header& h, const Timing& t) noexcept {
  std::array<std::byte, kHeaderBytes> raw;
  encode(h, raw);
  std::array<uint64_t, 8> w;
  std::memcpy(w.data(), raw.data(), sizeof w);
  if constexpr (std::endian::native == std::endian::big) {
    for (auto& x : w)
      x = __builtin_bswap64(x);
  }
  const bool v3 = h.layout == Layout::v3;
  mask_ = v3 ? kMaskV3 : kMaskV1;
  for (std::size_t i = 0; i < kCheckedWords; ++i)
    expect_[i] = w[i] & mask_[i];
  seconds_mask_ = v3 ? 0xFFFF'FFFFu : 0x3FFF'FFFFu;
  invalid_mask_ = v3 ? std::array<uint64_t, 2>{0, uint64_t{1} << 17}
                     : std::array<uint64_t, 2>{uint64_t{1} << 63, 0};
  frame_bytes_ = static_cast<std::size_t>(h.frame_bytes());
  timing_ = t;
  header_ = h;
  cached_seconds_ = h.seconds;
  cached_base_ = uint64_t{h.seconds / t.period} * t.frames_per_period;
  learned_ = true;
}

std::string_view to_string(FrameIndexer::Status s) noexcept {
  switch (s) {
    case FrameIndexer::Status::ok:
      return "ok";
    case FrameIndexer::Status::not_learned:
      return "not_learned";
    case FrameIndexer::Status::size_mismatch:
      return "size_mismatch";
    case FrameIndexer::Status::stream_changed:
      return "stream_changed";
    case FrameIndexer::Status::frame_out_of_range:
      return "frame_out_of_range";
    case FrameIndexer::Status::header_not_readable:
      return "header_not_readable";
  }
  return "unknown";
}

}  // namespace rocecap::capture::codif
