// What reading rocecapd's rings as a consumer costs (doc/consumers.md), against memcpy of the
// same bytes in the same run. A stream's ring (rocecapd's 128-byte split, 8192-byte CODIF data:
// 8298-byte frames) is filled with N frames and published to its descriptor log, all kept; a
// consumer::Stream is then built from read-only descriptors of the same memfds, as a consumer
// process gets them, and reads every frame:
//   copy      Stream::next + Stream::copy (header, data, generation check) into one buffer,
//             what `rocecap tap` does per frame;
//   in place  Stream::next, a 64-bit sum over the frame's data where it lies, still_valid():
//             a zero-copy stage;
// and the baselines over the same slots through the consumer's own mapping: memcpy of as many
// bytes per frame into the buffer, and the same 64-bit sum without the client (and both again
// through rocecapd's mapping: on some virtual machines a second mapping of the same pages reads
// far slower than the first, which the ratio must not hide). N frames (275 MB at 32768) are more
// than the caches hold, so these are memory-bound, as a consumer behind a real capture is. Host
// memory only.
//
//   build/bench/consumer_bench [--frames 32768] [--rounds 5]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capture/stream_pipeline.hpp"
#include "consumer/client/rocecap_consumer.hpp"
#include "writers/consumer_log.hpp"

namespace {

using rocecap::capture::SlotId;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kSplit = 128, kUdpOffset = 42, kData = 8192;
constexpr uint32_t kWire = kUdpOffset + 64 + kData;  // 8298 bytes on the wire (FCS excluded)

rocecap::capture::StreamSpec spec(uint32_t frames) {
  rocecap::capture::StreamSpec s;
  s.key = {0xEF110001u, 36001, 0xC000020Bu};
  s.ring.slots = frames;
  s.ring.header_slot_bytes = kSplit;
  s.ring.payload_slot_bytes = 9216 - kSplit;
  return s;
}

// The producer and the writer of rocecapd, reduced to what the log needs: every slot holds a
// frame (non-zero bytes), published in order and never released.
void fill(rocecap::capture::StreamPipeline& sp, rocecap::writers::ConsumerLog& log, uint32_t n) {
  auto& ring = sp.ring();
  std::vector<SlotId> ids;
  for (uint32_t i = 0; i < n; ++i) {
    const auto id = ring.acquire();
    if (!id) break;
    auto& m = ring.meta(*id);
    m = {};
    m.frame_index = 1000 + i;
    m.wire_bytes = kWire;
    m.header_bytes = kSplit;
    m.payload_bytes = kWire - kSplit;
    m.udp_payload_offset = kUdpOffset;
    std::memset(ring.header(*id).data(), static_cast<int>(i & 0x7f) + 1, kSplit);
    std::memset(ring.payload(*id).data(), static_cast<int>(i & 0x7f) + 2, kWire - kSplit);
    ring.publish(*id);
  }
  ids.resize(n);
  ids.resize(ring.pop(ids));
  log.publish(ids, 0);
}

uint64_t sum64(const std::byte* p, std::size_t n) {
  uint64_t s = 0, w = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::memcpy(&w, p + i, 8);
    s += w;
  }
  for (; i < n; ++i)
    s += static_cast<uint8_t>(p[i]);
  return s;
}

double gbps(uint64_t bytes, Clock::duration d) {
  return static_cast<double>(bytes) / std::chrono::duration<double>(d).count() / 1e9;
}

struct Round {
  double copy = 0, in_place = 0, memcpy_ = 0, sum = 0;  // memcpy_, sum: the consumer's mapping
  double own_memcpy = 0, own_sum = 0;                   // ... rocecapd's own mapping
};

// The baselines through the consumer's own mapping of the payload slab: the same bytes per
// frame (header 64 + data), one slot after the other.
void baselines(const rocecap::consumer::Stream& s, uint32_t n, std::vector<std::byte>& buf,
               uint64_t& sink, Round& r) {
  const std::span<const std::byte> slab = s.payload_slab();
  const std::size_t stride = s.control().payload_stride, each = kWire - kUdpOffset;
  uint64_t bytes = 0;
  auto t0 = Clock::now();
  for (uint32_t k = 0; k < n; ++k) {
    std::memcpy(buf.data(), slab.data() + k * stride, std::min(each, stride));
    sink += static_cast<uint8_t>(buf[0]);
    bytes += each;
  }
  r.memcpy_ = gbps(bytes, Clock::now() - t0);
  t0 = Clock::now();
  for (uint32_t k = 0; k < n; ++k)
    sink += sum64(slab.data() + k * stride, std::min(each, stride));
  r.sum = gbps(bytes, Clock::now() - t0);
}

Round round(const rocecap::capture::StreamPipeline& sp, const rocecap::writers::ConsumerLog& log,
            uint32_t n, std::vector<std::byte>& buf, uint64_t& sink) {
  auto ro = [](int fd) {
    return ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
  };
  const auto& ring = sp.ring();
  const auto& payload =
      dynamic_cast<const rocecap::capture::memory::HostMemory&>(ring.payload_memory());
  const int fds[3] = {ro(log.control().fd()), ro(ring.header_memory().fd()), ro(payload.fd())};
  rocecap::consumer::StreamInfo info;
  info.name = "bench";
  info.payload_memory = "host";
  Round r;
  uint64_t bytes = 0;
  rocecap::consumer::Stream s(info, fds[0], fds[1], fds[2]);
  rocecap::consumer::Frame f;
  // One untimed pass first: on some virtual machines (this one) the first reads through a
  // fresh mapping of pages another mapping holds run at a tenth of the speed, whatever reads
  // them (memcpy too); a consumer maps once and reads for hours.
  while (s.next(f) == rocecap::consumer::Event::frame)
    s.copy(f, buf);
  s.seek_oldest();
  auto t0 = Clock::now();
  while (s.next(f) == rocecap::consumer::Event::frame) {
    s.copy(f, buf);
    sink += static_cast<uint8_t>(buf[f.size() - 1]);
    bytes += f.size();
  }
  r.copy = gbps(bytes, Clock::now() - t0);
  s.seek_oldest();
  bytes = 0;
  t0 = Clock::now();
  while (s.next(f) == rocecap::consumer::Event::frame) {
    sink += sum64(f.data0.data(), f.data0.size()) + sum64(f.data1.data(), f.data1.size());
    sink += s.still_valid(f) ? 1 : 0;
    bytes += f.size();
  }
  r.in_place = gbps(bytes, Clock::now() - t0);
  baselines(s, n, buf, sink, r);
  for (int fd : fds)
    ::close(fd);
  // Baselines: the same bytes of the same slots (header 64 + data in both slots).
  const std::size_t head = kSplit - kUdpOffset, tail = kWire - kSplit;
  bytes = 0;
  t0 = Clock::now();
  for (SlotId id = 0; id < n; ++id) {
    std::memcpy(buf.data(), ring.header(id).data() + kUdpOffset, head);
    std::memcpy(buf.data() + head, ring.payload(id).data(), tail);
    sink += static_cast<uint8_t>(buf[head + tail - 1]);
    bytes += head + tail;
  }
  r.own_memcpy = gbps(bytes, Clock::now() - t0);
  t0 = Clock::now();
  for (SlotId id = 0; id < n; ++id)
    sink += sum64(ring.header(id).data() + kUdpOffset, head) + sum64(ring.payload(id).data(), tail);
  r.own_sum = gbps(bytes, Clock::now() - t0);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t frames = 32768, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--frames") frames = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    if (a == "--rounds") rounds = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
  }
  rocecap::capture::StreamPipeline sp(spec(frames));
  rocecap::writers::ConsumerLog log(
      sp, rocecap::writers::ConsumerLogOptions{std::bit_ceil(2 * frames), true});
  fill(sp, log, frames);
  std::vector<std::byte> buf(16384);
  uint64_t sink = 0;
  std::vector<double> copy, in_place, mem, sum;
  for (uint32_t k = 0; k < rounds; ++k) {
    const Round r = round(sp, log, frames, buf, sink);
    std::printf(
        "round %u: consumer copy %.2f GB/s, memcpy %.2f GB/s; in place %.2f GB/s, sum %.2f GB/s "
        "(through rocecapd's own mapping: memcpy %.2f GB/s, sum %.2f GB/s)\n",
        k + 1, r.copy, r.memcpy_, r.in_place, r.sum, r.own_memcpy, r.own_sum);
    copy.push_back(r.copy);
    in_place.push_back(r.in_place);
    mem.push_back(r.memcpy_);
    sum.push_back(r.sum);
  }
  std::printf(
      "median of %u rounds, %u frames of %u bytes, same mapping: consumer copy %.2f GB/s = %.2f "
      "x memcpy (%.2f GB/s); consumer in place %.2f GB/s = %.2f x the plain sum (%.2f GB/s) "
      "[%llu]\n",
      rounds, frames, kWire - kUdpOffset, median(copy), median(copy) / median(mem), median(mem),
      median(in_place), median(in_place) / median(sum), median(sum),
      static_cast<unsigned long long>(sink & 1));
  return 0;
}
