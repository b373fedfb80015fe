// CODIF frame headers (layout in the header comments below): decode, encode, validate.
//
// A header is eight little-endian 64-bit words. Two layouts exist: the current one (version 3,
// sync 0xFEEDCAFE in word 5 bits 0-31) and codifio's older one ("v1", sync 0xABADDEED in word 5
// bits 32-63). The layout of a frame is chosen by its sync word from a configured SyncSet.
// Pure functions: no allocation, no exceptions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rocecap::capture::codif {

inline constexpr std::size_t kHeaderBytes = 64;
inline constexpr uint32_t kSyncV3 = 0xFEEDCAFE;
inline constexpr uint32_t kSyncV1 = 0xABADDEED;
inline constexpr uint32_t kSyncAdeadbee = 0xADEADBEE;  // some hardware streams; layout by config

enum class Layout : uint8_t { v3, v1 };

// Accepted sync words and the layout each implies. At most kMaxSyncs entries.
struct SyncSet {
  static constexpr std::size_t kMaxSyncs = 4;
  struct Entry {
    uint32_t sync;
    Layout layout;
  };
  std::array<Entry, kMaxSyncs> entries{};
  std::size_t size = 0;

  // FEEDCAFE -> v3 and ABADDEED -> v1.
  static SyncSet defaults() noexcept;
  // False when full or when the word is already present.
  bool add(uint32_t sync, Layout layout) noexcept;
};

// Every field of both layouts, decoded. Fields a layout lacks stay 0 / false.
struct Header {
  Layout layout = Layout::v3;
  uint32_t sync = kSyncV3;
  uint32_t frame = 0;    // frame number within the current period
  uint32_t seconds = 0;  // seconds since the epoch at the start of the current period
  uint8_t epoch = 0;     // half-years since 2000-01-01
  uint8_t nbits = 0;
  bool atypical = false;
  bool invalid = false;
  bool complex = false;
  bool cal = false;
  uint8_t representation = 0;
  uint8_t version = 0;
  uint8_t protocol = 0;
  uint16_t period = 0;  // seconds
  uint16_t thread_id = 0;
  uint16_t group_id = 0;
  uint16_t secondary_id = 0;
  uint16_t station_id = 0;  // two ASCII characters, first in the high byte
  uint32_t nchan = 0;       // v1 stores nchan - 1 in 16 bits, so 65536 channels are possible there
  uint16_t block_length = 0;
  uint32_t data_words = 0;  // payload length in units of 8 bytes (header excluded)
  uint64_t total_samples = 0;
  uint32_t metadata_id = 0;            // v3 word 5 bits 32-63
  std::array<uint64_t, 2> metadata{};  // v3 words 6-7

  constexpr uint64_t payload_bytes() const noexcept { return uint64_t{data_words} * 8; }
  constexpr uint64_t frame_bytes() const noexcept { return payload_bytes() + kHeaderBytes; }
  friend constexpr bool operator==(const Header&, const Header&) = default;
};

// Decodes 64 bytes. Returns false (and leaves `out` unspecified) when the sync word matches
// no entry of `syncs` in that entry's layout position.
bool decode(std::span<const std::byte, kHeaderBytes> bytes, const SyncSet& syncs,
            Header& out) noexcept;
inline bool decode(std::span<const std::byte> bytes, const SyncSet& syncs, Header& out) noexcept {
  return bytes.size() >= kHeaderBytes && decode(bytes.first<kHeaderBytes>(), syncs, out);
}
// A 64-byte array converts to both spans above; this picks the fixed one.
inline bool decode(const std::array<std::byte, kHeaderBytes>& bytes, const SyncSet& syncs,
                   Header& out) noexcept {
  return decode(std::span<const std::byte, kHeaderBytes>(bytes), syncs, out);
}

// Encodes in h.layout. Values wider than a layout's field are truncated to the field.
void encode(const Header& h, std::span<std::byte, kHeaderBytes> out) noexcept;

// Why a decoded header cannot be sequenced. Stable order: indexes counters and labels.
enum class Invalid : uint8_t {
  ok = 0,
  bad_sync,          // no accepted sync word (from decode returning false)
  zero_data_length,  // data array length 0
  size_mismatch,     // frame bytes != UDP payload bytes
  zero_nbits,
  zero_nchan,
  zero_period,
  zero_total_samples,
  fractional_samples,  // payload bits not a whole number of samples
  fractional_frames,   // total samples not a whole number of frames
  frame_out_of_range,  // frame number >= frames per period
  too_many_frames,     // frames per period > 2^32: frame numbers could not count them
  count_
};
inline constexpr std::size_t kInvalidCount = static_cast<std::size_t>(Invalid::count_);
std::string_view to_string(Invalid v) noexcept;

// Samples per channel in one frame, frames per period, and the period: constant for a stream.
struct Timing {
  uint64_t samples_per_frame = 0;
  uint64_t frames_per_period = 0;
  uint32_t period = 0;
  // Bytes of each frame besides its data array: the sequencer's byte count is
  // payload_bytes() + header_bytes. 64 for CODIF; a VDIF stream seen through this timing model
  // (capture/vdif/timeline.hpp) has 32 or 16.
  uint32_t header_bytes = kHeaderBytes;
};

// Checks the header against itself and the UDP payload length; fills `timing` when ok.
Invalid validate(const Header& h, std::size_t udp_payload_bytes, Timing& timing) noexcept;

// Absolute frame index since the epoch: (seconds / period) * frames_per_period + frame.
// Cannot overflow for a validated header: frames_per_period <= 2^32 and seconds < 2^32.
constexpr uint64_t absolute_index(uint32_t frame, uint32_t seconds, const Timing& t) noexcept {
  return uint64_t{seconds / t.period} * t.frames_per_period + frame;
}
constexpr uint64_t absolute_index(const Header& h, const Timing& t) noexcept {
  return absolute_index(h.frame, h.seconds, t);
}

// Unix time of the start of half-year `epoch` (1 Jan or 1 Jul of 2000 + epoch / 2), seconds.
int64_t epoch_unix_seconds(uint8_t epoch) noexcept;

// Unix time of the start of the frame, in nanoseconds (rounded down). Saturates at INT64_MAX
// (after the year 2262). Precondition: `t` comes from validate() of the same stream.
int64_t frame_start_unix_ns(const Header& h, const Timing& t) noexcept;

// The header the frame `n` frames after `h` has: frame number and seconds advanced with the
// period roll-over done right for any period; every other field copied. seconds moves in whole
// periods and keeps h.seconds % period (0 for streams that follow doc/codif.md), so
// absolute_index(advance(h, t, n), t) == absolute_index(h, t) + n while seconds fits its field.
Header advance(const Header& h, const Timing& t, uint64_t n) noexcept;

// The header of absolute frame index `index` in the same stream as `h` (same rules as advance).
Header at_index(const Header& h, const Timing& t, uint64_t index) noexcept;

// Station id <-> two-character name ("AT"); non-printable characters become '?'.
std::array<char, 3> station_name(uint16_t station_id) noexcept;
constexpr uint16_t station_id(char a, char b) noexcept {
  return static_cast<uint16_t>((static_cast<uint8_t>(a) << 8) | static_cast<uint8_t>(b));
}

}  // namespace rocecap::capture::codif
