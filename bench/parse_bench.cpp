// Per-packet cost of the capture hot path's header work on the 8298-byte ATCA-style packet:
// Ethernet/IPv4/UDP parse + CODIF header check + absolute frame index.
//
// Packets sit as the verbs backend leaves them: a slab of 128-byte header slots (the split
// size) whose completions report 8298 wire bytes; the payload is elsewhere and never touched.
// Each benchmark iteration handles one packet, cycling through 64 consecutive frames of one
// stream, so "Time" is nanoseconds per packet.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "capture/codif/frame_indexer.hpp"
#include "capture/codif/header.hpp"
#include "capture/net/packet.hpp"
#include "capture/net/udp_builder.hpp"
#include "capture/vdif/header.hpp"
#include "capture/vdif/timeline.hpp"

namespace {

using namespace rocecap;

constexpr std::size_t kSlot = 128;
constexpr std::size_t kPackets = 64;  // power of two: the cycle is a mask
constexpr std::size_t kWireBytes = 8298;

struct Slab {
  alignas(64) std::array<std::byte, kSlot * kPackets> bytes{};
  std::span<const std::byte> head(std::size_t i) const { return {bytes.data() + i * kSlot, kSlot}; }
};

// ASKAP-style stream: 4 channels of 16-bit complex samples, 512 samples per 8192-byte frame,
// 62,500 frames per 27 s period.
capture::codif::Header stream_header() {
  capture::codif::Header h;
  h.version = 3;
  h.epoch = 40;
  h.nbits = 16;
  h.complex = true;
  h.nchan = 4;
  h.period = 27;
  h.data_words = 8192 / 8;
  h.total_samples = 32'000'000;
  h.seconds = 27 * 1000;
  h.frame = 1000;
  return h;
}

const Slab& slab() {
  static const Slab s = [] {
    Slab out;
    capture::net::UdpFrameSpec spec;
    spec.dst_mac = capture::net::multicast_mac(0xEF110001);
    spec.src_ip = 0xC0000201;
    spec.dst_ip = 0xEF110001;
    spec.src_port = 36001;
    spec.dst_port = 36001;
    capture::codif::Header h = stream_header();
    for (std::size_t i = 0; i < kPackets; ++i) {
      std::byte* slot = out.bytes.data() + i * kSlot;
      capture::net::write_udp_headers(spec, kWireBytes - 42, {slot, kSlot});
      h.frame = static_cast<uint32_t>(1000 + i);
      capture::codif::encode(h, std::span<std::byte, capture::codif::kHeaderBytes>(
                                    slot + 42, capture::codif::kHeaderBytes));
    }
    return out;
  }();
  return s;
}

// Baseline: copy each packet's 64-byte CODIF header out of its slot.
void BM_Baseline_Memcpy64(benchmark::State& state) {
  const Slab& s = slab();
  std::array<std::byte, 64> dst;
  std::size_t i = 0;
  for (auto _ : state) {
    std::memcpy(dst.data(), s.head(i).data() + 42, 64);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
    i = (i + 1) & (kPackets - 1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_ParseUdp(benchmark::State& state) {
  const Slab& s = slab();
  std::size_t i = 0;
  capture::net::UdpFrame f;
  for (auto _ : state) {
    const auto err = capture::net::parse_udp(s.head(i), kWireBytes, f);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(f);
    i = (i + 1) & (kPackets - 1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The generic path: parse, decode all fields, validate (divisions), absolute_index.
void BM_ParseDecodeValidateIndex(benchmark::State& state) {
  const Slab& s = slab();
  const capture::codif::SyncSet syncs = capture::codif::SyncSet::defaults();
  std::size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    capture::net::UdpFrame f;
    capture::codif::Header h;
    capture::codif::Timing t;
    if (capture::net::parse_udp(s.head(i), kWireBytes, f) == capture::net::ParseError::ok &&
        capture::codif::decode(s.head(i).subspan(f.payload_offset), syncs, h) &&
        capture::codif::validate(h, f.payload_bytes, t) == capture::codif::Invalid::ok) {
      sum += capture::codif::absolute_index(h, t);
    }
    benchmark::DoNotOptimize(sum);
    i = (i + 1) & (kPackets - 1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The hot path: parse, then the per-stream FrameIndexer (compare + add).
void BM_ParseFrameIndexer(benchmark::State& state) {
  const Slab& s = slab();
  capture::codif::FrameIndexer ix;
  if (ix.learn(s.head(0).subspan(42), kWireBytes - 42, capture::codif::SyncSet::defaults()) !=
      capture::codif::Invalid::ok) {
    state.SkipWithError("stream did not validate");
    return;
  }
  std::size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    capture::net::UdpFrame f;
    capture::codif::FrameIndexer::Result r;
    if (capture::net::parse_udp(s.head(i), kWireBytes, f) == capture::net::ParseError::ok &&
        ix.index(s.head(i).subspan(f.payload_offset), f.payload_bytes, r) ==
            capture::codif::FrameIndexer::Status::ok) {
      sum += r.index;
    }
    benchmark::DoNotOptimize(sum);
    i = (i + 1) & (kPackets - 1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_FrameIndexerOnly(benchmark::State& state) {
  const Slab& s = slab();
  capture::codif::FrameIndexer ix;
  if (ix.learn(s.head(0).subspan(42), kWireBytes - 42, capture::codif::SyncSet::defaults()) !=
      capture::codif::Invalid::ok) {
    state.SkipWithError("stream did not validate");
    return;
  }
  std::size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    capture::codif::FrameIndexer::Result r;
    if (ix.index(s.head(i).subspan(42), kWireBytes - 42, r) ==
        capture::codif::FrameIndexer::Status::ok) {
      sum += r.index;
    }
    benchmark::DoNotOptimize(sum);
    i = (i + 1) & (kPackets - 1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// VDIF (doc/vdif.md): a packet of about the same size, 8 VTP + 32 VDIF header + 8208 data bytes
// of UDP payload (8290 on the wire), 25,600 frames per second; only the header work is measured.
constexpr std::size_t kVdifWireBytes = 42 + 8 + 32 + 8208;

const Slab& vdif_slab() {
  static const Slab s = [] {
    Slab out;
    capture::net::UdpFrameSpec spec;
    spec.dst_mac = capture::net::multicast_mac(0xEF110001);
    spec.src_ip = 0xC0000201;
    spec.dst_ip = 0xEF110001;
    spec.src_port = 36001;
    spec.dst_port = 36001;
    capture::vdif::Header h;
    h.epoch = 50;
    h.seconds = 1000;
    h.nbits = 2;
    h.log2_nchan = 2;
    h.frame_words = (32 + 8208) / 8;
    for (std::size_t i = 0; i < kPackets; ++i) {
      std::byte* slot = out.bytes.data() + i * kSlot;
      capture::net::write_udp_headers(spec, kVdifWireBytes - 42, {slot, kSlot});
      capture::vdif::put_vtp_sequence(i, std::span<std::byte, 8>(slot + 42, 8));
      h.frame = static_cast<uint32_t>(1000 + i);
      capture::vdif::encode(h, std::span<std::byte, 32>(slot + 50, 32));
    }
    return out;
  }();
  return s;
}

// VDIF's whole header path per packet, as frame_check_vdif.cpp does it: parse, VTP number,
// decode, validate against frames per second, the sequencer's view, absolute index.
void BM_VdifParseDecodeValidateIndex(benchmark::State& state) {
  const Slab& s = vdif_slab();
  const capture::vdif::Rate rate{.frames_per_second = 25'600};
  std::size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    capture::net::UdpFrame f;
    capture::vdif::Header h;
    capture::vdif::Timing t;
    capture::codif::Header view;
    capture::codif::Timing view_t;
    if (capture::net::parse_udp(s.head(i), kVdifWireBytes, f) == capture::net::ParseError::ok) {
      const auto udp = s.head(i).subspan(f.payload_offset);
      sum += capture::vdif::vtp_sequence(udp.first<8>());
      if (capture::vdif::decode(udp.subspan(8), h) &&
          capture::vdif::validate(h, f.payload_bytes - 8, rate, t) == capture::vdif::Invalid::ok) {
        capture::vdif::sequencer_view(h, t, view, view_t);
        sum += capture::codif::absolute_index(view, view_t);
      }
    }
    benchmark::DoNotOptimize(sum);
    i = (i + 1) & (kPackets - 1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The VDIF header alone: decode + validate + absolute index (no parse, no view).
void BM_VdifDecodeValidateOnly(benchmark::State& state) {
  const Slab& s = vdif_slab();
  const capture::vdif::Rate rate{.frames_per_second = 25'600};
  std::size_t i = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    capture::vdif::Header h;
    capture::vdif::Timing t;
    if (capture::vdif::decode(s.head(i).subspan(50), h) &&
        capture::vdif::validate(h, 32 + 8208, rate, t) == capture::vdif::Invalid::ok) {
      sum += capture::vdif::absolute_index(h, t);
    }
    benchmark::DoNotOptimize(sum);
    i = (i + 1) & (kPackets - 1);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

}  // namespace

// ROCECAP_BENCH_ITERATIONS=N fixes the iteration count, so that instruction counts under
// callgrind can be differenced between two N (see BENCHMARKS.md).
int main(int argc, char** argv) {
  const char* fixed = std::getenv("ROCECAP_BENCH_ITERATIONS");
  const std::pair<const char*, void (*)(benchmark::State&)> all[] = {
      {"BM_Baseline_Memcpy64", BM_Baseline_Memcpy64},
      {"BM_ParseUdp", BM_ParseUdp},
      {"BM_ParseDecodeValidateIndex", BM_ParseDecodeValidateIndex},
      {"BM_ParseFrameIndexer", BM_ParseFrameIndexer},
      {"BM_FrameIndexerOnly", BM_FrameIndexerOnly},
      {"BM_VdifParseDecodeValidateIndex", BM_VdifParseDecodeValidateIndex},
      {"BM_VdifDecodeValidateOnly", BM_VdifDecodeValidateOnly},
  };
  for (const auto& [name, fn] : all) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    if (fixed != nullptr) b->Iterations(std::strtoll(fixed, nullptr, 10));
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
