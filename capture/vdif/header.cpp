#include "capture/vdif/header.hpp"

#include <bit>
#include <cstring>
#include <limits>

#include "capture/codif/header.hpp"

namespace rocecap::capture::vdif {
namespace {

uint32_t load_le32(const std::byte* p) noexcept {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  return v;
}

void store_le32(uint32_t v, std::byte* p) noexcept {
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap32(v);
  std::memcpy(p, &v, sizeof v);
}

constexpr uint32_t bits(uint32_t word, unsigned lo, unsigned width) noexcept {
  return (word >> lo) & ((width == 32) ? ~uint32_t{0} : ((uint32_t{1} << width) - 1));
}

constexpr uint32_t put(uint32_t value, unsigned lo, unsigned width) noexcept {
  const uint32_t mask = (width == 32) ? ~uint32_t{0} : ((uint32_t{1} << width) - 1);
  return (value & mask) << lo;
}

}  // namespace

bool decode(std::span<const std::byte> bytes, Header& out) noexcept {
  if (bytes.size() < kLegacyHeaderBytes) return false;
  std::array<uint32_t, 8> w{};
  for (std::size_t i = 0; i < 4; ++i)
    w[i] = load_le32(bytes.data() + 4 * i);
  const bool legacy = bits(w[0], 30, 1) != 0;
  if (!legacy) {
    if (bytes.size() < kHeaderBytes) return false;
    for (std::size_t i = 4; i < 8; ++i)
      w[i] = load_le32(bytes.data() + 4 * i);
  }
  out.invalid = bits(w[0], 31, 1) != 0;
  out.legacy = legacy;
  out.seconds = bits(w[0], 0, 30);
  out.frame = bits(w[1], 0, 24);
  out.epoch = static_cast<uint8_t>(bits(w[1], 24, 6));
  out.unassigned = static_cast<uint8_t>(bits(w[1], 30, 2));
  out.frame_words = bits(w[2], 0, 24);
  out.log2_nchan = static_cast<uint8_t>(bits(w[2], 24, 5));
  out.version = static_cast<uint8_t>(bits(w[2], 29, 3));
  out.station_id = static_cast<uint16_t>(bits(w[3], 0, 16));
  out.thread_id = static_cast<uint16_t>(bits(w[3], 16, 10));
  out.nbits = static_cast<uint8_t>(bits(w[3], 26, 5) + 1);
  out.complex = bits(w[3], 31, 1) != 0;
  out.edv = static_cast<uint8_t>(bits(w[4], 24, 8));
  out.extended = {bits(w[4], 0, 24), w[5], w[6], w[7]};
  return true;
}

void encode(const Header& h, std::span<std::byte, kHeaderBytes> out) noexcept {
  std::array<uint32_t, 8> w{};
  w[0] = put(h.seconds, 0, 30) | put(h.legacy, 30, 1) | put(h.invalid, 31, 1);
  w[1] = put(h.frame, 0, 24) | put(h.epoch, 24, 6) | put(h.unassigned, 30, 2);
  w[2] = put(h.frame_words, 0, 24) | put(h.log2_nchan, 24, 5) | put(h.version, 29, 3);
  const uint32_t nbits_minus_one = h.nbits == 0 ? 0 : h.nbits - 1u;
  w[3] = put(h.station_id, 0, 16) | put(h.thread_id, 16, 10) | put(nbits_minus_one, 26, 5) |
         put(h.complex, 31, 1);
  w[4] = put(h.extended[0], 0, 24) | put(h.edv, 24, 8);
  w[5] = h.extended[1];
  w[6] = h.extended[2];
  w[7] = h.extended[3];
  const std::size_t words = h.header_bytes() / 4;
  for (std::size_t i = 0; i < words; ++i)
    store_le32(w[i], out.data() + 4 * i);
}

std::string_view to_string(Invalid v) noexcept {
  switch (v) {
    case Invalid::ok:
      return "ok";
    case Invalid::short_header:
      return "vdif_short_header";
    case Invalid::short_frame:
      return "vdif_short_frame";
    case Invalid::size_mismatch:
      return "vdif_size_mismatch";
    case Invalid::fractional_samples:
      return "vdif_fractional_samples";
    case Invalid::fractional_rate:
      return "vdif_fractional_rate";
    case Invalid::frame_out_of_range:
      return "vdif_frame_out_of_range";
    case Invalid::unlisted_thread:
      return "vdif_unlisted_thread";
    case Invalid::header_form:
      return "vdif_header_form";
    case Invalid::vtp_missing:
      return "vdif_vtp_missing";
    case Invalid::version:
      return "vdif_version";
    case Invalid::count_:
      break;
  }
  return "unknown";
}

Invalid validate(const Header& h, std::size_t frame_bytes, const Rate& rate,
                 Timing& timing) noexcept {
  if (h.version > kMaxVersion) return Invalid::version;
  if (h.frame_bytes() <= h.header_bytes()) return Invalid::short_frame;
  if (h.frame_bytes() != frame_bytes) return Invalid::size_mismatch;
  Timing t;
  const uint64_t sample_bits = h.nchan() * h.nbits * (h.complex ? 2u : 1u);
  const uint64_t payload_bits = h.payload_bytes() * 8;
  if (payload_bits % sample_bits == 0) t.samples_per_frame = payload_bits / sample_bits;
  if (rate.frames_per_second != 0) {
    t.frames_per_second = rate.frames_per_second;
  } else {
    // The rate is only known through the samples: they must fill whole frames.
    if (t.samples_per_frame == 0) return Invalid::fractional_samples;
    if (rate.sample_rate % t.samples_per_frame != 0) return Invalid::fractional_rate;
    t.frames_per_second = rate.sample_rate / t.samples_per_frame;
    if (t.frames_per_second == 0) return Invalid::fractional_rate;
  }
  if (h.frame >= t.frames_per_second) return Invalid::frame_out_of_range;
  timing = t;
  return Invalid::ok;
}

int64_t frame_start_unix_ns(const Header& h, const Timing& t) noexcept {
  // The reference epoch counts half-years since 2000 as CODIF's does (doc/vdif.md).
  const int64_t whole = codif::epoch_unix_seconds(h.epoch) + int64_t{h.seconds};
  // frame < frames_per_second <= 2^24 for any frame number the header can hold.
  const auto frac = static_cast<int64_t>(uint64_t{h.frame} * 1'000'000'000u / t.frames_per_second);
  return whole * 1'000'000'000 + frac;
}

uint64_t vtp_sequence(std::span<const std::byte, kVtpBytes> bytes) noexcept {
  uint64_t v;
  std::memcpy(&v, bytes.data(), sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

void put_vtp_sequence(uint64_t sequence, std::span<std::byte, kVtpBytes> out) noexcept {
  if constexpr (std::endian::native == std::endian::big) sequence = __builtin_bswap64(sequence);
  std::memcpy(out.data(), &sequence, sizeof sequence);
}

}  // namespace rocecap::capture::vdif
