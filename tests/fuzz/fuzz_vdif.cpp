// VDIF decode/validate/encode and the frame timeline on arbitrary UDP payloads.
// Input: the UDP payload (a VDIF frame, 32- or 16-byte header first). Each input is tried with
// frames per second given and with a sample rate, so both ways of knowing the rate are covered.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "capture/vdif/header.hpp"
#include "fuzz_check.hpp"

namespace vdif = rocecap::capture::vdif;

namespace {

void check_timeline(const vdif::Header& h, const vdif::Timing& t, uint64_t n) {
  const uint64_t i = vdif::absolute_index(h, t);
  FUZZ_CHECK(vdif::at_index(h, t, i) == h);
  const vdif::Header a = vdif::at_index(h, t, i + n);
  if ((i + n) / t.frames_per_second <= 0x3FFF'FFFF) {  // seconds still fit 30 bits
    FUZZ_CHECK(vdif::absolute_index(a, t) == i + n);
    FUZZ_CHECK(a.frame < t.frames_per_second);
    FUZZ_CHECK(vdif::frame_start_unix_ns(a, t) >= vdif::frame_start_unix_ns(h, t));
  }
}

void one(const std::byte* data, std::size_t size, const vdif::Rate& rate) {
  vdif::Header h;
  if (!vdif::decode(std::span<const std::byte>(data, size), h)) {
    FUZZ_CHECK(size < vdif::kHeaderBytes);
    return;
  }
  FUZZ_CHECK(h.nbits >= 1 && h.nbits <= 32 && h.thread_id <= vdif::kMaxThreadId);
  FUZZ_CHECK(size >= h.header_bytes());
  vdif::Timing t;
  const vdif::Invalid v = vdif::validate(h, size, rate, t);
  FUZZ_CHECK(vdif::to_string(v) != "unknown");
  // Whatever validate says, encoding the decoded header gives back the input's header bytes.
  std::array<std::byte, vdif::kHeaderBytes> again{};
  vdif::encode(h, again);
  FUZZ_CHECK(std::memcmp(again.data(), data, h.header_bytes()) == 0);
  vdif::Header d;
  FUZZ_CHECK(vdif::decode(std::span<const std::byte>(again).first(h.header_bytes()), d));
  FUZZ_CHECK(d == h);
  if (v != vdif::Invalid::ok) return;
  FUZZ_CHECK(h.frame_bytes() == size && h.frame < t.frames_per_second);
  uint64_t n = 0;
  std::memcpy(&n, data, size < sizeof n ? size : sizeof n);
  check_timeline(h, t, n % (uint64_t{1} << 40));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  // Exactly-sized copy, so that AddressSanitizer sees any read past the payload.
  auto copy = std::make_unique<std::byte[]>(size);
  if (size != 0) std::memcpy(copy.get(), data, size);
  one(copy.get(), size, vdif::Rate{.frames_per_second = 25'600});
  one(copy.get(), size, vdif::Rate{.frames_per_second = 1});
  one(copy.get(), size, vdif::Rate{.sample_rate = 64'000'000});
  return 0;
}
