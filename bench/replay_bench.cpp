// The capture pipeline end to end on a recorded pcap file: PcapSource::open_file -> Ingest ->
// StreamRing -> CaptureWriter -> RawWriter, next to a memcpy of the same bytes measured in the
// same run. bench/replay_bench.sh generates the pcap (rocecap gen --pcap) and runs this.
//
// Environment: ROCECAP_REPLAY_PCAP (the pcap file, required) and ROCECAP_REPLAY_OUT (a
// directory on tmpfs for the raw files, default /dev/shm). The streams are found by reading
// the file once, so any `rocecap gen` arguments work.
//
// One iteration replays the whole file. Capture and writer run on this one thread, taking
// turns per 256-frame dispatch (as the daemon's loops do per batch, but without the second
// thread): on 2 shared vCPUs a second thread measures the scheduler more than the code, and
// turn-taking can never overrun a ring, so every frame is written (checked). The daemon's
// two-thread run is measured by the script. Bytes and packets per second are per CPU second of
// this thread (system time of read() and write() included).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "capture/ingest.hpp"
#include "capture/net/packet.hpp"
#include "capture/pcap/pcap_source.hpp"
#include "writers/capture_writer.hpp"

namespace {

using namespace rocecap;
namespace fs = std::filesystem;

constexpr int kDispatchBatch = 256;  // the daemon's capture loop batch

// What the file holds: its streams, frame count and wire bytes.
struct Corpus {
  std::string path;
  std::vector<capture::StreamKey> keys;
  uint64_t frames = 0;
  uint64_t wire_bytes = 0;
};

class KeyCollector final : public capture::pcap::FrameSink {
 public:
  explicit KeyCollector(Corpus& c) : c_(c) {}
  void on_frame(std::span<const std::byte> captured, std::size_t wire_bytes,
                int64_t) noexcept override {
    ++c_.frames;
    c_.wire_bytes += wire_bytes;
    capture::net::UdpFrame f;
    if (capture::net::parse_udp(captured, wire_bytes, f) != capture::net::ParseError::ok) return;
    const capture::StreamKey k{f.dst_ip, f.dst_port, f.src_ip};
    if (std::find(c_.keys.begin(), c_.keys.end(), k) == c_.keys.end()) c_.keys.push_back(k);
  }

 private:
  Corpus& c_;
};

const Corpus* corpus() {
  static const std::unique_ptr<Corpus> c = []() -> std::unique_ptr<Corpus> {
    const char* path = std::getenv("ROCECAP_REPLAY_PCAP");
    if (path == nullptr) return nullptr;
    auto out = std::make_unique<Corpus>();
    out->path = path;
    KeyCollector collect(*out);
    auto src = capture::pcap::PcapSource::open_file(path, capture::pcap::Pace::fast);
    while (src.dispatch(collect, 4096) >= 0) {
    }
    return out;
  }();
  return c.get();
}

fs::path out_dir() {
  const char* d = std::getenv("ROCECAP_REPLAY_OUT");
  return d != nullptr ? d : "/dev/shm";
}

const Corpus* need_corpus(benchmark::State& state) {
  const Corpus* c = corpus();
  if (c == nullptr) state.SkipWithError("set ROCECAP_REPLAY_PCAP (see bench/replay_bench.sh)");
  return c;
}

void count(benchmark::State& state, const Corpus& c) {
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * c.frames));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * c.wire_bytes));
}

// rocecapd's stream set-up for a CODIF stream with default capture/output settings
// (daemon/lib/run/run_assembly.cpp stream_spec).
capture::StreamSpec spec_for(const capture::StreamKey& key) {
  capture::StreamSpec s;
  s.key = key;
  s.ring.slots = 4096;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = 9216 - 128;
  s.sequencer.reorder_window = 8;
  s.sequencer.history = 4096;
  s.sequencer.resync_frames = 1u << 17;
  return s;
}

// A fresh pipeline per replay (a sequencer that has seen the file calls a replay duplicates).
struct Pipeline {
  std::vector<std::unique_ptr<capture::StreamPipeline>> streams;
  std::unique_ptr<capture::Ingest> ingest;

  explicit Pipeline(const Corpus& c) {
    std::vector<capture::StreamPipeline*> ptrs;
    for (const auto& k : c.keys) {
      streams.push_back(std::make_unique<capture::StreamPipeline>(spec_for(k)));
      ptrs.push_back(streams.back().get());
    }
    ingest = std::make_unique<capture::Ingest>(ptrs, false);
  }

  uint64_t ring_full_drops() const {
    uint64_t n = 0;
    for (const auto& s : streams)
      n += s->ring().stats().ring_full_drops;
    return n;
  }
  uint64_t delivered() const {
    uint64_t n = 0;
    for (const auto& s : streams)
      n += s->sequencer().stats().delivered;
    return n;
  }
};

// Replays the whole file, letting `consume` drain the rings after every dispatch.
template <typename Consume>
void replay(const Corpus& c, capture::Ingest& ingest, Consume&& consume) {
  auto src = capture::pcap::PcapSource::open_file(c.path, capture::pcap::Pace::fast);
  src.attach(ingest);
  while (src.poll(kDispatchBatch) >= 0)  // as rocecapd's capture loop: one virtual call a batch
    consume();
  ingest.flush_all();
  while (consume() != 0) {
  }
}

// Every frame went through to the consumer, or the figures mean nothing.
bool all_through(benchmark::State& state, const Corpus& c, const Pipeline& p) {
  if (p.ring_full_drops() != 0 || p.delivered() != c.frames) {
    state.SkipWithError("frames were dropped or rejected: not a clean replay");
    return false;
  }
  return true;
}

// Baseline: the same number of 8298-byte copies, from a buffer larger than the last-level
// cache into another, so every byte comes from and goes to memory as in the pipeline.
void BM_Baseline_Memcpy(benchmark::State& state) {
  const Corpus* c = need_corpus(state);
  if (c == nullptr) return;
  const std::size_t frame = c->wire_bytes / c->frames;
  constexpr std::size_t kBuffer = std::size_t{256} << 20;  // 8x the 32 MiB L3
  const std::size_t chunks = kBuffer / frame;
  std::vector<std::byte> src(kBuffer, std::byte{0x5a});
  std::vector<std::byte> dst(kBuffer, std::byte{0});
  for (auto _ : state) {
    std::size_t at = 0;
    for (uint64_t i = 0; i < c->frames; ++i) {
      std::memcpy(dst.data() + at * frame, src.data() + at * frame, frame);
      at = at + 1 == chunks ? 0 : at + 1;
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  count(state, *c);
}

// libpcap reading the file, frames handed to a sink that does nothing.
void BM_PcapReadOnly(benchmark::State& state) {
  const Corpus* c = need_corpus(state);
  if (c == nullptr) return;
  struct Null final : capture::pcap::FrameSink {
    uint64_t n = 0;
    void on_frame(std::span<const std::byte>, std::size_t, int64_t) noexcept override { ++n; }
  } sink;
  for (auto _ : state) {
    auto src = capture::pcap::PcapSource::open_file(c->path, capture::pcap::Pace::fast);
    while (src.dispatch(sink, kDispatchBatch) >= 0) {
    }
  }
  benchmark::DoNotOptimize(sink.n);
  count(state, *c);
}

// The capture side in full, the output discarded: the consumer pops and releases every slot
// without writing. (/dev/null cannot be a raw output: files are created O_EXCL in a directory,
// and a file unlinked after open would still be tmpfs pages, i.e. the tmpfs case.)
void BM_ReplayDiscard(benchmark::State& state) {
  const Corpus* c = need_corpus(state);
  if (c == nullptr) return;
  std::vector<capture::SlotId> batch(256);
  std::unique_ptr<Pipeline> pipeline;
  for (auto _ : state) {
    state.PauseTiming();
    pipeline.reset();  // unmapping the rings is set-up cost, not replay
    pipeline = std::make_unique<Pipeline>(*c);
    Pipeline& p = *pipeline;
    state.ResumeTiming();
    replay(*c, *p.ingest, [&] {
      std::size_t total = 0;
      for (const auto& s : p.streams) {
        const std::size_t n = s->ring().pop(batch);
        s->ring().release(std::span<const capture::SlotId>(batch.data(), n));
        capture::GapEvent g;
        while (s->sequencer().pop_gap(g)) {
        }
        total += n;
      }
      return total;
    });
    state.PauseTiming();
    if (!all_through(state, *c, p)) break;
    state.ResumeTiming();
  }
  count(state, *c);
}

// The whole path into raw CODIF files on tmpfs (ROCECAP_REPLAY_OUT), as rocecapd writes them
// with its default output options (fsync at close, no rotation); the argument is the staging
// buffer of each file in KiB (8192 is rocecapd's).
void BM_ReplayRawTmpfs(benchmark::State& state) {
  const Corpus* c = need_corpus(state);
  if (c == nullptr) return;
  const fs::path dir = out_dir() / ("replay_bench." + std::to_string(::getpid()));
  uint64_t written = 0;
  std::unique_ptr<Pipeline> pipeline;
  std::unique_ptr<writers::CaptureWriter> writer;
  for (auto _ : state) {
    state.PauseTiming();
    writer.reset();
    pipeline.reset();  // unmapping the rings is set-up cost, not replay
    fs::remove_all(dir);
    fs::create_directories(dir);
    pipeline = std::make_unique<Pipeline>(*c);
    Pipeline& p = *pipeline;
    std::vector<writers::StreamWriters> per_stream(c->keys.size());
    for (std::size_t s = 0; s < per_stream.size(); ++s) {
      auto paths = [dir, s](uint64_t seq, fs::path& out) {
        out = dir / ("stream" + std::to_string(s) + "." + std::to_string(seq) + ".codif");
        return writers::Status{};
      };
      writers::RotationOptions rotation;
      rotation.buffer_bytes = static_cast<std::size_t>(state.range(0)) << 10;
      per_stream[s].raw.emplace(paths, rotation);
    }
    bool failed = false;
    writer = std::make_unique<writers::CaptureWriter>(
        p.ingest->streams(), p.ingest->arrivals(), std::move(per_stream), std::nullopt,
        writers::CaptureWriterOptions{}, [&](const writers::Status&) { failed = true; });
    writers::CaptureWriter& w = *writer;
    state.ResumeTiming();
    replay(*c, *p.ingest, [&] { return w.poll(); });
    (void)w.close();
    state.PauseTiming();
    written = 0;
    for (const auto& e : fs::directory_iterator(dir))
      written += e.file_size();
    fs::remove_all(dir);
    if (failed) state.SkipWithError("a write failed (tmpfs full?)");
    if (failed || !all_through(state, *c, p)) break;
    state.ResumeTiming();
  }
  state.counters["file_bytes"] = static_cast<double>(written);
  count(state, *c);
}

BENCHMARK(BM_Baseline_Memcpy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PcapReadOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayDiscard)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayRawTmpfs)->Unit(benchmark::kMillisecond)->Arg(8192)->Arg(1024)->Arg(256);

}  // namespace

BENCHMARK_MAIN();
