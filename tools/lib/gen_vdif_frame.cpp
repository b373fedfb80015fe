#include "tools/lib/gen_vdif_frame.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tools/lib/payload_pattern.hpp"

namespace rocecap::tools {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument(what);
}

// Largest UDP payload an IPv4 datagram can carry.
constexpr std::size_t kMaxPayload = 65507;

capture::vdif::Header base_header(const GenFrameParams& p) {
  if (p.station.size() != 2)
    bad("--station: must be two ASCII characters, not '" + p.station + "'");
  if (p.nbits == 0 || p.nbits > 32) bad("--nbits: VDIF holds 1 to 32 bits per sample");
  if (p.nchan == 0 || !std::has_single_bit(unsigned{p.nchan}))
    bad("--nchan: VDIF channels are a power of two, not " + std::to_string(p.nchan));
  if (p.epoch > 63) bad("--epoch: VDIF holds at most 63");
  capture::vdif::Header h;
  h.legacy = p.legacy;
  const std::size_t frame = h.header_bytes() + p.payload_bytes;
  if (p.payload_bytes == 0 || p.payload_bytes % 8 != 0)
    bad("--payload-bytes: must be a positive multiple of 8");
  if (frame + (p.vtp ? capture::vdif::kVtpBytes : 0) > kMaxPayload)
    bad("--payload-bytes: the VDIF frame exceeds the largest UDP payload");
  h.station_id = static_cast<uint16_t>((static_cast<uint8_t>(p.station[0]) << 8) |
                                       static_cast<uint8_t>(p.station[1]));
  h.epoch = p.epoch;
  h.nbits = p.nbits;
  h.complex = p.complex;
  h.log2_nchan = static_cast<uint8_t>(std::countr_zero(unsigned{p.nchan}));
  h.frame_words = static_cast<uint32_t>(frame / 8);
  h.version = 1;
  h.seconds = p.start_seconds;
  h.frame = p.start_frame;
  return h;
}

}  // namespace

VdifFrameBuilder::VdifFrameBuilder(const GenFrameParams& p)
    : base_(base_header(p)),
      threads_(p.threads.empty() ? std::vector<uint16_t>{p.thread_id} : p.threads),
      vtp_bytes_(p.vtp ? capture::vdif::kVtpBytes : 0) {
  if (p.frames_per_second == 0) bad("--frames-per-second: must be at least 1 for --format vdif");
  if (p.frames_per_second > uint64_t{capture::vdif::kMaxFrameNumber} + 1)
    bad("--frames-per-second: VDIF frame numbers hold at most 2^24 frames per second");
  for (uint16_t t : threads_) {
    if (t > capture::vdif::kMaxThreadId) bad("--threads: VDIF thread ids are 0 to 1023");
  }
  if (p.start_seconds > 0x3FFF'FFFFu) bad("--start-seconds: VDIF holds 30 bits");
  const capture::vdif::Invalid why = capture::vdif::validate(
      base_, base_.frame_bytes(), capture::vdif::Rate{.frames_per_second = p.frames_per_second},
      timing_);
  if (why == capture::vdif::Invalid::frame_out_of_range) {
    bad("--start-frame " + std::to_string(p.start_frame) + " is not below --frames-per-second " +
        std::to_string(p.frames_per_second));
  }
  if (why != capture::vdif::Invalid::ok)
    bad("frame parameters rejected by VDIF validation: " +
        std::string(capture::vdif::to_string(why)));
  first_index_ = capture::vdif::absolute_index(base_, timing_);
  check_tone(p);
  tone_ =
      Tone(ToneLayout{p.tone, p.tone_channel, p.nchan, p.complex, true, timing_.samples_per_frame});
}

capture::vdif::Header VdifFrameBuilder::header(uint32_t thread, uint64_t index,
                                               Fate fate) const noexcept {
  capture::vdif::Header h = capture::vdif::at_index(base_, timing_, index);
  h.thread_id = threads_[thread];
  if (fate == Fate::invalid) h.invalid = true;
  if (fate == Fate::bad_sync) h.frame_words += 1;  // the length field lies by 8 bytes
  return h;
}

std::size_t VdifFrameBuilder::build(uint32_t group, uint32_t antenna, uint32_t thread,
                                    uint64_t index, uint64_t psn, Fate fate,
                                    std::span<std::byte> out) const noexcept {
  const std::size_t size = fate == Fate::truncated ? truncated_bytes() : frame_bytes();
  if (vtp_bytes_ != 0) capture::vdif::put_vtp_sequence(psn, out.first<capture::vdif::kVtpBytes>());
  const capture::vdif::Header h = header(thread, index, fate);
  std::array<std::byte, capture::vdif::kHeaderBytes> raw{};
  capture::vdif::encode(h, raw);
  const std::size_t hb = base_.header_bytes();
  std::memcpy(out.data() + vtp_bytes_, raw.data(), hb);
  // Each thread of an antenna gets its own pattern key.
  const auto data = out.subspan(vtp_bytes_ + hb, size - vtp_bytes_ - hb);
  const uint32_t key = antenna | (thread << 16);
  if (tone_.enabled()) {
    tone_.fill(key, index, 0, data);
  } else {
    fill_pattern(key, index, 0, data);
  }
  pulse_.overlay(group, key, index, 0, data);
  return size;
}

}  // namespace rocecap::tools
