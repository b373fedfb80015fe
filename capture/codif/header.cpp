#include "capture/codif/header.hpp"

#include <bit>
#include <chrono>
#include <cstring>
#include <limits>

namespace rocecap::capture::codif {
namespace {

__extension__ using u128 = unsigned __int128;
__extension__ using i128 = __int128;

// The frame field is 32 bits wide; more frames per period could not be numbered, and this bound
// keeps absolute_index() inside 64 bits.
constexpr uint64_t kMaxFramesPerPeriod = uint64_t{1} << 32;

using Words = std::array<uint64_t, 8>;

Words load_words(std::span<const std::byte, kHeaderBytes> bytes) noexcept {
  Words w;
  std::memcpy(w.data(), bytes.data(), kHeaderBytes);
  if constexpr (std::endian::native == std::endian::big) {
    for (auto& x : w)
      x = __builtin_bswap64(x);
  }
  return w;
}

void store_words(const Words& w, std::span<std::byte, kHeaderBytes> out) noexcept {
  Words le = w;
  if constexpr (std::endian::native == std::endian::big) {
    for (auto& x : le)
      x = __builtin_bswap64(x);
  }
  std::memcpy(out.data(), le.data(), kHeaderBytes);
}

constexpr uint64_t bits(uint64_t word, unsigned lo, unsigned width) noexcept {
  return (word >> lo) & ((width == 64) ? ~uint64_t{0} : ((uint64_t{1} << width) - 1));
}

constexpr uint64_t put(uint64_t value, unsigned lo, unsigned width) noexcept {
  const uint64_t mask = (width == 64) ? ~uint64_t{0} : ((uint64_t{1} << width) - 1);
  return (value & mask) << lo;
}

void decode_v3(const Words& w, Header& h) noexcept {
  h.layout = Layout::v3;
  h.frame = static_cast<uint32_t>(bits(w[0], 0, 32));
  h.seconds = static_cast<uint32_t>(bits(w[0], 32, 32));
  h.epoch = static_cast<uint8_t>(bits(w[1], 0, 8));
  h.nbits = static_cast<uint8_t>(bits(w[1], 8, 8));
  h.atypical = bits(w[1], 16, 1) != 0;
  h.invalid = bits(w[1], 17, 1) != 0;
  h.complex = bits(w[1], 18, 1) != 0;
  h.cal = bits(w[1], 19, 1) != 0;
  h.representation = static_cast<uint8_t>(bits(w[1], 20, 4));
  h.version = static_cast<uint8_t>(bits(w[1], 24, 5));
  h.protocol = static_cast<uint8_t>(bits(w[1], 29, 3));
  h.period = static_cast<uint16_t>(bits(w[1], 48, 16));
  h.thread_id = static_cast<uint16_t>(bits(w[2], 0, 16));
  h.group_id = static_cast<uint16_t>(bits(w[2], 16, 16));
  h.secondary_id = static_cast<uint16_t>(bits(w[2], 32, 16));
  h.station_id = static_cast<uint16_t>(bits(w[2], 48, 16));
  h.nchan = static_cast<uint32_t>(bits(w[3], 0, 16));
  h.block_length = static_cast<uint16_t>(bits(w[3], 16, 16));
  h.data_words = static_cast<uint32_t>(bits(w[3], 32, 32));
  h.total_samples = w[4];
  h.sync = static_cast<uint32_t>(bits(w[5], 0, 32));
  h.metadata_id = static_cast<uint32_t>(bits(w[5], 32, 32));
  h.metadata = {w[6], w[7]};
}

Words encode_v3(const Header& h) noexcept {
  Words w{};
  w[0] = put(h.frame, 0, 32) | put(h.seconds, 32, 32);
  w[1] = put(h.epoch, 0, 8) | put(h.nbits, 8, 8) | put(h.atypical, 16, 1) | put(h.invalid, 17, 1) |
         put(h.complex, 18, 1) | put(h.cal, 19, 1) | put(h.representation, 20, 4) |
         put(h.version, 24, 5) | put(h.protocol, 29, 3) | put(h.period, 48, 16);
  w[2] = put(h.thread_id, 0, 16) | put(h.group_id, 16, 16) | put(h.secondary_id, 32, 16) |
         put(h.station_id, 48, 16);
  w[3] = put(h.nchan, 0, 16) | put(h.block_length, 16, 16) | put(h.data_words, 32, 32);
  w[4] = h.total_samples;
  w[5] = put(h.sync, 0, 32) | put(h.metadata_id, 32, 32);
  w[6] = h.metadata[0];
  w[7] = h.metadata[1];
  return w;
}

// codifio 2019-2022 layout. nchan is stored minus one.
void decode_v1(const Words& w, Header& h) noexcept {
  h = Header{};
  h.layout = Layout::v1;
  h.frame = static_cast<uint32_t>(bits(w[0], 0, 32));
  h.seconds = static_cast<uint32_t>(bits(w[0], 32, 30));
  h.complex = bits(w[0], 62, 1) != 0;
  h.invalid = bits(w[0], 63, 1) != 0;
  h.station_id = static_cast<uint16_t>(bits(w[1], 0, 16));
  h.representation = static_cast<uint8_t>(bits(w[1], 22, 4));
  h.epoch = static_cast<uint8_t>(bits(w[1], 26, 6));
  h.data_words = static_cast<uint32_t>(bits(w[1], 32, 24));
  h.nbits = static_cast<uint8_t>(bits(w[1], 56, 5));
  h.version = static_cast<uint8_t>(bits(w[1], 61, 3));
  h.group_id = static_cast<uint16_t>(bits(w[2], 0, 16));
  h.thread_id = static_cast<uint16_t>(bits(w[2], 16, 16));
  h.nchan = static_cast<uint32_t>(bits(w[2], 32, 16) + 1);
  h.block_length = static_cast<uint16_t>(bits(w[2], 48, 16));
  h.period = static_cast<uint16_t>(bits(w[3], 32, 16));
  h.total_samples = w[4];
  h.sync = static_cast<uint32_t>(bits(w[5], 32, 32));
}

Words encode_v1(const Header& h) noexcept {
  Words w{};
  w[0] =
      put(h.frame, 0, 32) | put(h.seconds, 32, 30) | put(h.complex, 62, 1) | put(h.invalid, 63, 1);
  w[1] = put(h.station_id, 0, 16) | put(h.representation, 22, 4) | put(h.epoch, 26, 6) |
         put(h.data_words, 32, 24) | put(h.nbits, 56, 5) | put(h.version, 61, 3);
  const uint64_t nchan_minus_one = h.nchan == 0 ? 0 : h.nchan - 1u;
  w[2] = put(h.group_id, 0, 16) | put(h.thread_id, 16, 16) | put(nchan_minus_one, 32, 16) |
         put(h.block_length, 48, 16);
  w[3] = put(h.period, 32, 16);
  w[4] = h.total_samples;
  w[5] = put(h.sync, 32, 32);
  return w;
}

}  // namespace

SyncSet SyncSet::defaults() noexcept {
  SyncSet s;
  s.add(kSyncV3, Layout::v3);
  s.add(kSyncV1, Layout::v1);
  return s;
}

bool SyncSet::add(uint32_t sync, Layout layout) noexcept {
  if (size == kMaxSyncs) return false;
  for (std::size_t i = 0; i < size; ++i) {
    if (entries[i].sync == sync) return false;
  }
  entries[size++] = Entry{sync, layout};
  return true;
}

bool decode(std::span<const std::byte, kHeaderBytes> bytes, const SyncSet& syncs,
            Header& out) noexcept {
  const Words w = load_words(bytes);
  const auto low = static_cast<uint32_t>(w[5]);
  const auto high = static_cast<uint32_t>(w[5] >> 32);
  for (std::size_t i = 0; i < syncs.size; ++i) {
    const auto& e = syncs.entries[i];
    if (e.layout == Layout::v3 && low == e.sync) {
      decode_v3(w, out);
      return true;
    }
    if (e.layout == Layout::v1 && high == e.sync) {
      decode_v1(w, out);
      return true;
    }
  }
  return false;
}

void encode(const Header& h, std::span<std::byte, kHeaderBytes> out) noexcept {
  store_words(h.layout == Layout::v3 ? encode_v3(h) : encode_v1(h), out);
}

std::string_view to_string(Invalid v) noexcept {
  switch (v) {
    case Invalid::ok:
      return "ok";
    case Invalid::bad_sync:
      return "bad_sync";
    case Invalid::zero_data_length:
      return "zero_data_length";
    case Invalid::size_mismatch:
      return "size_mismatch";
    case Invalid::zero_nbits:
      return "zero_nbits";
    case Invalid::zero_nchan:
      return "zero_nchan";
    case Invalid::zero_period:
      return "zero_period";
    case Invalid::zero_total_samples:
      return "zero_total_samples";
    case Invalid::fractional_samples:
      return "fractional_samples";
    case Invalid::fractional_frames:
      return "fractional_frames";
    case Invalid::frame_out_of_range:
      return "frame_out_of_range";
    case Invalid::too_many_frames:
      return "too_many_frames";
    case Invalid::count_:
      break;
  }
  return "unknown";
}

Invalid validate(const Header& h, std::size_t udp_payload_bytes, Timing& timing) noexcept {
  if (h.data_words == 0) return Invalid::zero_data_length;
  if (h.frame_bytes() != udp_payload_bytes) return Invalid::size_mismatch;
  if (h.nbits == 0) return Invalid::zero_nbits;
  if (h.nchan == 0) return Invalid::zero_nchan;
  if (h.period == 0) return Invalid::zero_period;
  if (h.total_samples == 0) return Invalid::zero_total_samples;
  const uint64_t payload_bits = h.payload_bytes() * 8;
  const uint64_t sample_bits = uint64_t{h.nchan} * h.nbits * (h.complex ? 2 : 1);
  if (payload_bits % sample_bits != 0) return Invalid::fractional_samples;
  const uint64_t spf = payload_bits / sample_bits;
  if (h.total_samples % spf != 0) return Invalid::fractional_frames;
  const uint64_t fpp = h.total_samples / spf;
  if (fpp > kMaxFramesPerPeriod) return Invalid::too_many_frames;
  if (h.frame >= fpp) return Invalid::frame_out_of_range;
  timing = Timing{spf, fpp, h.period, kHeaderBytes};
  return Invalid::ok;
}

namespace {

// Every epoch's date in Unix seconds, computed at compile time: the sequencer asks per packet.
constexpr std::array<int64_t, 256> kEpochSeconds = [] {
  using namespace std::chrono;
  std::array<int64_t, 256> t{};
  for (unsigned e = 0; e < t.size(); ++e) {
    const year_month_day ymd{year{static_cast<int>(2000 + e / 2)}, month{e % 2 == 0 ? 1u : 7u},
                             day{1}};
    t[e] = sys_days{ymd}.time_since_epoch() / seconds{1};
  }
  return t;
}();

}  // namespace

int64_t epoch_unix_seconds(uint8_t epoch) noexcept {
  return kEpochSeconds[epoch];
}

int64_t frame_start_unix_ns(const Header& h, const Timing& t) noexcept {
  const int64_t whole = epoch_unix_seconds(h.epoch) + int64_t{h.seconds};
  // 64-bit arithmetic when frame x period x 10^9 fits (every real stream), else 128-bit.
  const uint64_t frame_periods = uint64_t{h.frame} * t.period;
  uint64_t scaled = 0;
  const u128 frac = __builtin_mul_overflow(frame_periods, uint64_t{1'000'000'000}, &scaled)
                        ? u128{frame_periods} * 1'000'000'000u / t.frames_per_period
                        : u128{scaled / t.frames_per_period};
  const i128 ns = i128{whole} * 1'000'000'000 + static_cast<i128>(frac);
  constexpr i128 kMax = std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(ns > kMax ? kMax : ns);
}

Header at_index(const Header& h, const Timing& t, uint64_t index) noexcept {
  Header r = h;
  // A stream whose seconds are offset from a period boundary keeps that offset: the frame the
  // sender would have sent carries it too.
  const uint64_t phase = h.seconds % t.period;
  r.seconds = static_cast<uint32_t>((index / t.frames_per_period) * t.period + phase);
  r.frame = static_cast<uint32_t>(index % t.frames_per_period);
  return r;
}

Header advance(const Header& h, const Timing& t, uint64_t n) noexcept {
  return at_index(h, t, absolute_index(h, t) + n);
}

std::array<char, 3> station_name(uint16_t id) noexcept {
  auto printable = [](unsigned c) { return (c >= 0x20 && c < 0x7F) ? static_cast<char>(c) : '?'; };
  return {printable(id >> 8), printable(id & 0xFF), '\0'};
}

}  // namespace rocecap::capture::codif
