// Per-stream fast path from a CODIF frame to its absolute frame index.
//
// decode() + validate() + absolute_index() cost several 64-bit divisions per packet. Within one
// stream everything but frame, seconds and a few flag bits is constant, so FrameIndexer learns
// the stream once (the slow, checked path) and then, per packet, compares the constant header
// bits with the learned ones and adds the frame number to a cached period base. The division
// runs only when seconds changes (once per period). It gives exactly absolute_index() of the
// decoded header, or a Status telling the caller to take the slow path.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "capture/codif/header.hpp"

namespace rocecap::capture::codif {

class FrameIndexer {
 public:
  enum class Status : uint8_t {
    ok = 0,
    not_learned,          // no stream learned yet
    size_mismatch,        // UDP payload length differs from the learned frame size
    stream_changed,       // a constant header field (sync, ids, sizes, epoch, period...) differs
    frame_out_of_range,   // frame number >= frames per period
    header_not_readable,  // fewer than kReadBytes of the header readable (header/payload split)
  };

  // Bytes of the CODIF header index() reads: words 0-5 hold every field that matters for
  // timing and identity; 6-7 are metadata.
  static constexpr std::size_t kReadBytes = 48;

  struct Result {
    uint64_t index = 0;    // == absolute_index(decoded header, timing())
    bool invalid = false;  // the header's invalid bit
  };

  // Decodes and validates one UDP payload and, when it is ok, adopts its stream. Returns the
  // reason it was not adopted (bad_sync when decode fails); the previous stream is kept then.
  Invalid learn(std::span<const std::byte> udp_payload, const SyncSet& syncs) noexcept {
    return learn(udp_payload, udp_payload.size(), syncs);
  }
  // The same when only `head` (the readable start of the UDP payload, at least 64 bytes for
  // success) is at hand and the payload length comes from the UDP header.
  Invalid learn(std::span<const std::byte> head, std::size_t udp_payload_bytes,
                const SyncSet& syncs) noexcept;

  // Adopts the stream of a header that validate() accepted with timing `t`.
  void learn(const Header& h, const Timing& t) noexcept;

  void forget() noexcept { *this = FrameIndexer{}; }
  bool learned() const noexcept { return learned_; }
  const Timing& timing() const noexcept { return timing_; }
  // The header the stream was learned from (reference for fill frames).
  const Header& header() const noexcept { return header_; }

  // The index of the frame whose UDP payload is `udp_payload`, when it belongs to the learned
  // stream; otherwise why not, and the caller takes the slow path (decode, validate, learn).
  Status index(std::span<const std::byte> udp_payload, Result& out) noexcept {
    return index(udp_payload, udp_payload.size(), out);
  }
  // The same for a split packet: `head` is the readable start of the UDP payload,
  // `udp_payload_bytes` the payload length from the UDP header.
  Status index(std::span<const std::byte> head, std::size_t udp_payload_bytes,
               Result& out) noexcept {
    if (udp_payload_bytes != frame_bytes_) {
      return learned_ ? Status::size_mismatch : Status::not_learned;
    }
    if (head.size() < kReadBytes) return Status::header_not_readable;
    const std::byte* p = head.data();
    const uint64_t w0 = load_le64(p);
    uint64_t diff = 0;
    for (std::size_t i = 0; i < kCheckedWords; ++i) {
      diff |= (load_le64(p + 8 * i) ^ expect_[i]) & mask_[i];
    }
    if (diff != 0) return Status::stream_changed;
    const auto frame = static_cast<uint32_t>(w0);
    if (frame >= timing_.frames_per_period) return Status::frame_out_of_range;
    const auto seconds = static_cast<uint32_t>((w0 >> 32) & seconds_mask_);
    if (seconds != cached_seconds_) {
      cached_seconds_ = seconds;
      cached_base_ = uint64_t{seconds / timing_.period} * timing_.frames_per_period;
    }
    out.index = cached_base_ + frame;
    out.invalid = ((w0 & invalid_mask_[0]) | (load_le64(p + 8) & invalid_mask_[1])) != 0;
    return Status::ok;
  }

 private:
  static constexpr std::size_t kCheckedWords = kReadBytes / 8;

  static uint64_t load_le64(const std::byte* p) noexcept {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    return v;
  }

  std::array<uint64_t, kCheckedWords> expect_{};
  std::array<uint64_t, kCheckedWords> mask_{};
  std::size_t frame_bytes_ = ~std::size_t{0};  // never equals a real payload length
  Timing timing_{};
  Header header_{};
  uint64_t cached_base_ = 0;
  uint64_t seconds_mask_ = 0;
  std::array<uint64_t, 2> invalid_mask_{};  // the invalid bit: word 1 bit 17 (v3), 0/63 (v1)
  uint32_t cached_seconds_ = 0;
  bool learned_ = false;
};

std::string_view to_string(FrameIndexer::Status s) noexcept;

}  // namespace rocecap::capture::codif
