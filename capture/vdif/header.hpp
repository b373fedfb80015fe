// VDIF frame headers (doc/vdif.md): decode, encode, validate, and the frame timeline.
//
// A VDIF frame is a header of eight little-endian 32-bit words (32 bytes; the "legacy" form,
// bit 30 of word 0 set, has only words 0-3: 16 bytes) followed by the data array. Unlike CODIF,
// the frame length field counts the header too, and the number of frames per second is not in
// the header: the run file gives it (or a sample rate it follows from). Over UDP, the VDIF
// Transport Protocol may put an 8-byte packet sequence number in front of each frame.
// Pure functions: no allocation, no exceptions.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace rocecap::capture::vdif {

inline constexpr std::size_t kHeaderBytes = 32;
inline constexpr std::size_t kLegacyHeaderBytes = 16;
inline constexpr std::size_t kVtpBytes = 8;  // VTP packet sequence number, before the frame
inline constexpr uint32_t kMaxFrameNumber = (1u << 24) - 1;
inline constexpr uint16_t kMaxThreadId = (1u << 10) - 1;
// The version field of VDIF data: 0 in the VDIF 1.0 document, 1 in what most writers send
// (baseband's default, which also requires bits 30-31 to be 0; rocecap gen). 2 to 7 are no
// layout anyone defined: such a header is noise or another format, not a frame to place.
inline constexpr uint8_t kMaxVersion = 1;

// Every field of the header, decoded. A legacy header leaves edv and extended at 0.
struct Header {
  bool invalid = false;
  bool legacy = false;
  uint32_t seconds = 0;      // seconds since the reference epoch (30 bits)
  uint8_t epoch = 0;         // reference epoch: half-years since 2000-01-01 (6 bits)
  uint8_t unassigned = 0;    // word 1 bits 30-31 (0 in conforming headers)
  uint32_t frame = 0;        // frame number within the second (24 bits)
  uint8_t version = 0;       // VDIF version (3 bits)
  uint8_t log2_nchan = 0;    // channels = 2^log2_nchan (5 bits)
  uint32_t frame_words = 0;  // frame length, header included, in units of 8 bytes (24 bits)
  bool complex = false;
  uint8_t nbits = 1;                   // bits per sample (1-32; the header stores nbits - 1)
  uint16_t thread_id = 0;              // 10 bits
  uint16_t station_id = 0;             // two ASCII characters (first in the high byte) or a number
  uint8_t edv = 0;                     // extended data version (word 4 bits 24-31)
  std::array<uint32_t, 4> extended{};  // word 4 bits 0-23, words 5-7

  constexpr std::size_t header_bytes() const noexcept {
    return legacy ? kLegacyHeaderBytes : kHeaderBytes;
  }
  constexpr uint64_t frame_bytes() const noexcept { return uint64_t{frame_words} * 8; }
  // The data array; 0 when the length field is shorter than the header (validate rejects it).
  constexpr uint64_t payload_bytes() const noexcept {
    return frame_bytes() > header_bytes() ? frame_bytes() - header_bytes() : 0;
  }
  constexpr uint64_t nchan() const noexcept { return uint64_t{1} << log2_nchan; }
  friend constexpr bool operator==(const Header&, const Header&) = default;
};

// Decodes a header from the start of `bytes` (legacy: 16 bytes needed, else 32). Returns false,
// leaving `out` unspecified, when `bytes` is shorter than the header word 0 announces.
bool decode(std::span<const std::byte> bytes, Header& out) noexcept;

// Writes h.header_bytes() bytes of `out` (a legacy header leaves bytes 16-31 untouched).
// Values wider than a field are truncated to it.
void encode(const Header& h, std::span<std::byte, kHeaderBytes> out) noexcept;

// How the frames per second of a stream are known (the header does not carry them).
struct Rate {
  uint64_t frames_per_second = 0;  // from the run file; 0: derive from sample_rate
  uint64_t sample_rate = 0;        // samples per second per channel (complex: complex samples)
};

// Why a decoded header cannot be sequenced. Stable order: indexes counters and labels.
enum class Invalid : uint8_t {
  ok = 0,
  short_header,        // fewer bytes than the header (after the VTP number)
  short_frame,         // frame length field below header size, or zero
  size_mismatch,       // frame length field != UDP payload bytes (less the VTP number)
  fractional_samples,  // data array bits not a whole number of samples
  fractional_rate,     // sample rate not a whole number of frames per second
  frame_out_of_range,  // frame number >= frames per second
  unlisted_thread,     // a thread the stream does not record (streams.threads)
  header_form,         // legacy and 32-byte headers mixed in one stream
  vtp_missing,         // vtp: true and the UDP payload has no room for the 8-byte number
  version,             // version field 2-7: no VDIF layout (0 and 1 are, see kMaxVersion)
  count_
};
inline constexpr std::size_t kInvalidCount = static_cast<std::size_t>(Invalid::count_);
std::string_view to_string(Invalid v) noexcept;

struct Timing {
  uint64_t samples_per_frame = 0;  // per channel
  uint64_t frames_per_second = 0;
};

// Checks the header against itself (its version first), the frame bytes (UDP payload less any VTP
// number) and the rate; fills `timing` when ok.
Invalid validate(const Header& h, std::size_t frame_bytes, const Rate& rate,
                 Timing& timing) noexcept;

// Absolute frame index since the epoch: seconds x frames per second + frame number.
constexpr uint64_t absolute_index(const Header& h, const Timing& t) noexcept {
  return uint64_t{h.seconds} * t.frames_per_second + h.frame;
}

// The header of frame `index` of the stream of `h`: seconds and frame number from the index,
// every other field copied.
constexpr Header at_index(const Header& h, const Timing& t, uint64_t index) noexcept {
  Header r = h;
  r.seconds = static_cast<uint32_t>(index / t.frames_per_second);
  r.frame = static_cast<uint32_t>(index % t.frames_per_second);
  return r;
}

// Unix time of the start of the frame, nanoseconds.
int64_t frame_start_unix_ns(const Header& h, const Timing& t) noexcept;

// The VTP packet sequence number at the start of a UDP payload (little-endian, like the frame).
uint64_t vtp_sequence(std::span<const std::byte, kVtpBytes> bytes) noexcept;
void put_vtp_sequence(uint64_t sequence, std::span<std::byte, kVtpBytes> out) noexcept;

}  // namespace rocecap::capture::vdif
