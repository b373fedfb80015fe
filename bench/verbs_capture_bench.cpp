// Capture-thread cost per packet of the verbs backend (issue #6): the real rocecap path —
// VerbsSource::poll (CQ poll, Ingest::on_slot: parse, classify, CODIF check, sequence,
// publish; batched re-post) — against softverbs' synthetic wire, which completes receive WRs
// with valid CODIF v3 frames at full speed, like a NIC's DMA engine on its own core.
//
// Threads: the capture thread (this one) runs the loop of rocecapd's verbs capture thread
// (daemon/lib/run/capture_loop.cpp: poll up to 256, sched_yield on an empty poll, one clock read
// per iteration); a discarding writer thread pops every published slot and releases it at once, as
// a writer that keeps up would, so the release -> re-post path and its cross-thread queue traffic
// are part of the measurement; softverbs' wire thread is the third.
//
// Phases, each its own function so callgrind can count them apart (bench/verbs_capture_bench.sh):
//   capture_packets  the measured loop, until --packets N or --seconds S;
//   idle_polls       with the writer stopped and every slot filled, K loop iterations that all
//                    find the CQ empty: the cost of one idle iteration, so the idle polling
//                    inside capture_packets (when the loop outruns the wire) can be taken out;
//   baseline_memcpy64  a 64-byte memcpy per packet out of the header slots, the CPU yardstick
//                    measured in the same run.
// Usage (softverbs on the loader path, CAP_NET_RAW):
//   LD_LIBRARY_PATH=build/softverbs/lib SOFTVERBS_DEVICES=svw=wire
//   build/bench/verbs_capture_bench [--streams 6] [--seconds 3 | --packets N] [--idle-polls K]
//                                   [--consumer 1] [--format codif|vdif|vdif-vtp]
// --format: the frames the wire sends and the streams expect: CODIF with 8 KiB of data (the
// default), or VDIF with 1 KiB of data (100000 frames per second), without or with a VTP
// number; the bench sets SOFTVERBS_WIRE_FORMAT to match before the device opens.
// --consumer 1: as rocecapd with a consumers section (doc/consumers.md): slot generations on,
// rings sized for keep and hold, the writer publishes every frame to the stream's descriptor
// log before retaining it, and one lossy consumer thread reads every stream and copies each
// frame out; the capture thread's cost with and without is the consumer's price.
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "capture/ingest.hpp"
#include "capture/retention.hpp"
#include "capture/verbs/verbs_source.hpp"
#include "consumer/client/rocecap_consumer.hpp"
#include "daemon/lib/run/privileges.hpp"
#include "writers/consumer_log.hpp"

namespace {

using rocecap::capture::Ingest;
using rocecap::capture::SlotId;
using rocecap::capture::StreamPipeline;
using rocecap::capture::StreamRing;
using rocecap::capture::StreamSpec;
using rocecap::capture::verbs::VerbsOptions;
using rocecap::capture::verbs::VerbsSource;
using Clock = std::chrono::steady_clock;

constexpr int kBatch = 256;  // rocecapd's frames per poll
constexpr auto kHousekeeping = std::chrono::milliseconds(100);

enum class Format { codif, vdif, vdif_vtp };

struct Options {
  uint32_t streams = 6;
  Format format = Format::codif;
  bool consumer = false;  // a consumers section and one attached consumer (doc/consumers.md)
  double seconds = 3.0;
  uint64_t packets = 0;  // fixed count instead of a duration (callgrind)
  uint64_t idle_polls = 100000;
};

Format parse_format(const std::string& v) {
  if (v == "codif") return Format::codif;
  if (v == "vdif") return Format::vdif;
  if (v == "vdif-vtp") return Format::vdif_vtp;
  throw std::invalid_argument("--format: codif, vdif or vdif-vtp, not " + v);
}

const char* format_name(Format f) {
  return f == Format::codif ? "codif" : f == Format::vdif ? "vdif" : "vdif-vtp";
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + a);
    const char* v = argv[++i];
    if (a == "--streams") {
      o.streams = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (a == "--seconds") {
      o.seconds = std::strtod(v, nullptr);
    } else if (a == "--packets") {
      o.packets = std::strtoull(v, nullptr, 10);
    } else if (a == "--consumer") {
      o.consumer = std::strtoul(v, nullptr, 10) != 0;
    } else if (a == "--idle-polls") {
      o.idle_polls = std::strtoull(v, nullptr, 10);
    } else if (a == "--format") {
      o.format = parse_format(v);
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  if (o.streams == 0 || o.streams > 200) throw std::invalid_argument("--streams: 1..200");
  return o;
}

// rocecapd's defaults (daemon/lib/run/run_assembly.cpp): 4096 slots, 128-byte split, 9216-byte
// frames, reorder window 8. One group, one antenna (source address) per stream.
// With --consumer, as rocecapd sizes a ring for a consumers section (config/retention_plan.cpp):
// ring_depth + keep (ring_depth / 4) + hold headroom (ring_depth / 4).
// VDIF: the wire's 100000 frames per second (tests/softverbs/lib/wire.cpp), every thread.
constexpr uint32_t kKeep = 1024;
StreamSpec stream_spec(uint32_t index, bool consumer, Format format) {
  StreamSpec s;
  s.key = {0xEF110001u, 36001, 0xC000020Bu + index};  // 239.17.0.1:36001 from 192.0.2.11+i
  if (format != Format::codif) {
    s.format = rocecap::capture::StreamFormat::vdif;
    s.vdif.rate.frames_per_second = 100000;
    s.vdif.vtp = format == Format::vdif_vtp;
  }
  s.ring.slots = consumer ? 4096 + 2 * kKeep : 4096;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = 9216 - 128;
  s.sequencer.reorder_window = 8;
  s.sequencer.history = 4096;
  s.sequencer.resync_frames = 1u << 17;
  return s;
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Pops every published slot and releases it unwritten; with consumer logs, as rocecapd's writer
// does for consumers, each batch is first published to the stream's log and then retained.
class DiscardWriter {
 public:
  DiscardWriter(const std::vector<StreamPipeline*>& streams,
                const std::vector<rocecap::writers::ConsumerLog*>& logs)
      : streams_(streams), logs_(logs), thread_([this](std::stop_token st) { run(st); }) {}
  void stop() {
    thread_.request_stop();
    thread_.join();
  }
  uint64_t consumed() const { return consumed_.load(); }

 private:
  void run(const std::stop_token& st) {
    std::array<SlotId, kBatch> ids{};
    while (!st.stop_requested()) {
      std::size_t n = 0;
      for (std::size_t k = 0; k < streams_.size(); ++k)
        n += drain(k, ids);
      if (n == 0) sched_yield();
    }
  }
  std::size_t drain(std::size_t k, std::array<SlotId, kBatch>& ids) {
    StreamPipeline& sp = *streams_[k];
    const std::size_t n = sp.ring().pop(ids);
    if (n != 0) {
      const std::span<const SlotId> done(ids.data(), n);
      if (logs_.empty()) {
        sp.ring().release(done);
      } else {
        logs_[k]->publish(done, sp.retention->range().tail);
        sp.retention->retain(done);
      }
      consumed_.fetch_add(n, std::memory_order_relaxed);
    }
    return n;
  }

  std::vector<StreamPipeline*> streams_;
  std::vector<rocecap::writers::ConsumerLog*> logs_;
  std::atomic<uint64_t> consumed_{0};
  std::jthread thread_;
};

struct LoopCounts {
  uint64_t packets = 0;
  uint64_t iterations = 0;
  uint64_t empty = 0;
  bool failed = false;
};

// rocecapd's verbs capture loop, less its two atomic progress counters.
[[gnu::noinline]] LoopCounts capture_packets(VerbsSource& src, Ingest& ingest, uint64_t limit,
                                             Clock::time_point deadline) {
  LoopCounts c;
  int64_t tick = 0;
  auto next_housekeeping = Clock::now() + kHousekeeping;
  for (;;) {
    const int max = static_cast<int>(std::min<uint64_t>(kBatch, limit - c.packets));
    if (max == 0) break;
    const int n = src.poll(max);
    if (n < 0) {
      c.failed = true;
      break;
    }
    c.packets += static_cast<uint64_t>(n);
    ++c.iterations;
    if (n == 0) {
      ++c.empty;
      sched_yield();
    }
    const auto now = Clock::now();
    if (now >= deadline) break;
    if (now >= next_housekeeping) {
      next_housekeeping = now + kHousekeeping;
      ingest.set_tick(++tick);
      ingest.flush_idle(tick - 2);
    }
  }
  return c;
}

// The same loop body with nothing to receive; returns how many iterations found completions.
[[gnu::noinline]] uint64_t idle_polls(VerbsSource& src, uint64_t iterations) {
  uint64_t busy = 0;
  for (uint64_t i = 0; i < iterations; ++i) {
    if (src.poll(kBatch) != 0) {
      ++busy;
    } else {
      sched_yield();
    }
    [[maybe_unused]] const auto now = Clock::now();
    asm volatile("" : : "r"(&now) : "memory");
  }
  return busy;
}

[[gnu::noinline]] uint64_t baseline_memcpy64(const StreamRing& ring, uint64_t n) {
  std::array<std::byte, 64> out{};
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) {
    std::memcpy(out.data(), ring.header(static_cast<SlotId>(i % ring.slots())).data() + 42, 64);
    asm volatile("" : : "r"(out.data()) : "memory");
    sum += static_cast<uint8_t>(out[0]);
  }
  return sum;
}

// Polls until the wire has filled every posted slot (nothing is released any more).
void settle_full(VerbsSource& src) {
  for (int quiet = 0; quiet < 2000;) {
    quiet = src.poll(kBatch) == 0 ? quiet + 1 : 0;
    sched_yield();
  }
}

// An attached lossy consumer (consumer/client): reads every stream's descriptor log and copies
// each frame it gets out of the slots, as `rocecap tap` does, on its own thread.
class Reader {
 public:
  explicit Reader(const std::vector<std::unique_ptr<rocecap::writers::ConsumerLog>>& logs) {
    for (const auto& log : logs) {
      auto ro = [](int fd) {
        return ::open(("/proc/self/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
      };
      const StreamRing& ring = log->stream().ring();
      const auto& payload =
          dynamic_cast<const rocecap::capture::memory::HostMemory&>(ring.payload_memory());
      const int fds[3] = {ro(log->control().fd()), ro(ring.header_memory().fd()), ro(payload.fd())};
      rocecap::consumer::StreamInfo info;
      info.name = "bench";
      info.payload_memory = "host";
      streams_.emplace_back(info, fds[0], fds[1], fds[2]);
      for (int fd : fds)
        ::close(fd);
    }
    thread_ = std::jthread([this](std::stop_token st) { run(st); });
  }
  void stop() {
    thread_.request_stop();
    thread_.join();
  }
  uint64_t read() const {
    uint64_t n = 0;
    for (const auto& s : streams_)
      n += s.frames_read();
    return n;
  }
  uint64_t missed() const {
    uint64_t n = 0;
    for (const auto& s : streams_)
      n += s.frames_missed();
    return n;
  }

 private:
  void run(const std::stop_token& st) {
    std::vector<std::byte> buf(16384);
    rocecap::consumer::Frame f;
    while (!st.stop_requested()) {
      bool any = false;
      for (auto& s : streams_) {
        for (int i = 0; i < kBatch && s.next(f) != rocecap::consumer::Event::none; ++i) {
          any = true;
          if (f.size() <= buf.size()) s.copy(f, buf);
        }
      }
      if (!any) sched_yield();
    }
  }
  std::vector<rocecap::consumer::Stream> streams_;
  std::jthread thread_;
};

struct Rig {
  std::vector<std::unique_ptr<StreamPipeline>> pipes;
  std::vector<StreamPipeline*> ptrs;
  std::vector<std::unique_ptr<rocecap::writers::ConsumerLog>> logs;
  std::vector<rocecap::writers::ConsumerLog*> log_ptrs;
  std::unique_ptr<Ingest> ingest;
  std::unique_ptr<VerbsSource> source;

  Rig(uint32_t streams, bool consumer, Format format) {
    for (uint32_t i = 0; i < streams; ++i) {
      pipes.push_back(std::make_unique<StreamPipeline>(stream_spec(i, consumer, format)));
      ptrs.push_back(pipes.back().get());
      if (!consumer) continue;
      pipes.back()->retention =
          std::make_unique<rocecap::capture::Retention>(pipes.back()->ring(), kKeep);
      logs.push_back(std::make_unique<rocecap::writers::ConsumerLog>(
          *pipes.back(), rocecap::writers::ConsumerLogOptions{1u << 15, true}));
      log_ptrs.push_back(logs.back().get());
    }
    ingest = std::make_unique<Ingest>(ptrs, false);
    VerbsOptions o;
    o.device = "svw";
    o.interface = "wire";
    const char* sysfs = std::getenv("SOFTVERBS_SYSFS_ROOT");
    o.sysfs_root = sysfs != nullptr ? sysfs : "/nonexistent";
    // Read by softverbs when the device's wire starts, i.e. below.
    ::setenv("SOFTVERBS_WIRE_FORMAT", format_name(format), 1);
    source = std::make_unique<VerbsSource>(o, *ingest);
  }
};

struct Totals {
  uint64_t delivered = 0, lost = 0, rejected = 0, ring_full = 0;
};

Totals totals(const Rig& rig) {
  Totals t;
  for (const StreamPipeline* sp : rig.ptrs) {
    const auto s = sp->sequencer().stats();
    t.delivered += s.delivered;
    t.lost += s.lost;
    t.ring_full += sp->ring().stats().ring_full_drops;
  }
  for (std::size_t r = 0; r < rocecap::capture::kRejectReasonCount; ++r)
    t.rejected += rig.ingest->rejected(r);
  return t;
}

void report_capture(const Options& o, const LoopCounts& c, double wall, double cpu) {
  const auto p = static_cast<double>(c.packets);
  std::printf(
      "capture: format=%s streams=%u packets=%llu iterations=%llu empty_polls=%llu wall_s=%.3f "
      "cpu_s=%.3f pps_wall=%.0f pps_per_cpu_s=%.0f cpu_ns_per_packet=%.1f "
      "packets_per_busy_poll=%.1f\n",
      format_name(o.format), o.streams, static_cast<unsigned long long>(c.packets),
      static_cast<unsigned long long>(c.iterations), static_cast<unsigned long long>(c.empty), wall,
      cpu, p / wall, p / cpu, cpu * 1e9 / p,
      p / static_cast<double>(std::max<uint64_t>(1, c.iterations - c.empty)));
}

// Every completion must have been placed and sequenced: a rejected frame, a completion error
// or a failed source would mean the benchmark timed something other than the path. One
// exception: the synthetic wire drops frames while no receive is posted (as a NIC does; on a
// loaded host, or under valgrind, most of them), and a stream that lost that many in a row
// resyncs, rejecting as timeline outliers the frames it could not place on its timeline. Those
// went through the whole path (parse, classify, sequence) and are the sequencer's answer to
// that wire, so they are allowed when the wire dropped frames, and printed.
int check_placed(const Rig& rig, const Totals& t, uint64_t completions, uint64_t wc_errors) {
  const uint64_t outliers = rig.ingest->rejected(rocecap::capture::kRejectTimelineOutlier);
  const bool wire_dropped = rig.source->nic_drops().value_or(0) > 0;
  std::string why;
  if (t.rejected - (wire_dropped ? outliers : 0) != 0) why = "frames were rejected";
  if (wc_errors != 0) why = "completions with errors";
  if (rig.source->failed()) why = "the source failed: " + rig.source->failure();
  if (completions != rig.ingest->frames_seen()) why = "completions not all seen by Ingest";
  std::fflush(stdout);
  if (!why.empty()) {
    std::fprintf(stderr, "verbs_capture_bench: frames were not all placed (%s)\n", why.c_str());
    return 1;
  }
  if (outliers != 0) {
    std::printf("note: %llu timeline outliers after the wire dropped frames (allowed)\n",
                static_cast<unsigned long long>(outliers));
  }
  return 0;
}

int run(const Options& o) {
  Rig rig(o.streams, o.consumer, o.format);
  DiscardWriter writer(rig.ptrs, rig.log_ptrs);
  std::optional<Reader> reader;
  if (o.consumer) reader.emplace(rig.logs);
  const uint64_t limit = o.packets != 0 ? o.packets : ~uint64_t{0};
  const auto deadline =
      o.packets != 0
          ? Clock::time_point::max()
          : Clock::now() + std::chrono::microseconds(static_cast<int64_t>(o.seconds * 1e6));
  const auto w0 = Clock::now();
  const double c0 = thread_cpu_s();
  const LoopCounts c = capture_packets(*rig.source, *rig.ingest, limit, deadline);
  const double cpu = thread_cpu_s() - c0, wall = seconds_since(w0);
  if (c.failed) throw std::runtime_error(rig.source->failure());
  report_capture(o, c, wall, cpu);

  writer.stop();
  if (reader) {
    reader->stop();
    std::printf("consumer: frames_read=%llu frames_missed=%llu (of %llu published)\n",
                static_cast<unsigned long long>(reader->read()),
                static_cast<unsigned long long>(reader->missed()),
                static_cast<unsigned long long>(writer.consumed()));
  }
  settle_full(*rig.source);
  const double i0 = thread_cpu_s();
  const uint64_t busy = idle_polls(*rig.source, o.idle_polls);
  const double idle_ns = (thread_cpu_s() - i0) * 1e9 / static_cast<double>(o.idle_polls);
  const double busy_cpu = cpu - static_cast<double>(c.empty) * idle_ns * 1e-9;
  std::printf(
      "idle: iterations=%llu non_empty=%llu cpu_ns_per_idle_iteration=%.1f\n"
      "busy: cpu_s=%.3f pps_per_cpu_s=%.0f cpu_ns_per_packet=%.1f (idle iterations taken out)\n",
      static_cast<unsigned long long>(o.idle_polls), static_cast<unsigned long long>(busy), idle_ns,
      busy_cpu, static_cast<double>(c.packets) / busy_cpu,
      busy_cpu * 1e9 / static_cast<double>(c.packets));

  const double b0 = thread_cpu_s();
  const uint64_t sum = baseline_memcpy64(rig.ptrs[0]->ring(), c.packets);
  const double bcpu = thread_cpu_s() - b0;
  std::printf("baseline_memcpy64: copies=%llu cpu_ns_per_copy=%.2f (sum %llu)\n",
              static_cast<unsigned long long>(c.packets),
              bcpu * 1e9 / static_cast<double>(c.packets), static_cast<unsigned long long>(sum));

  rig.ingest->flush_all();
  const Totals t = totals(rig);
  const auto st = rig.source->stats();
  std::printf(
      "check: completions=%llu delivered=%llu discarded=%llu lost_on_wire=%llu rejected=%llu "
      "wc_errors=%llu posted=%llu nic_drops=%lld frames_seen=%llu source_failed=%d\n",
      static_cast<unsigned long long>(st.completions), static_cast<unsigned long long>(t.delivered),
      static_cast<unsigned long long>(writer.consumed()), static_cast<unsigned long long>(t.lost),
      static_cast<unsigned long long>(t.rejected), static_cast<unsigned long long>(st.wc_errors),
      static_cast<unsigned long long>(st.posted),
      static_cast<long long>(rig.source->nic_drops().value_or(0)),
      static_cast<unsigned long long>(rig.ingest->frames_seen()), rig.source->failed() ? 1 : 0);

  return check_placed(rig, t, st.completions, st.wc_errors);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse(argc, argv);
    if (const auto why = rocecap::daemon::check_privileges("verbs", 0); !why.empty()) {
      std::fprintf(stderr, "verbs_capture_bench: %s\n", why.c_str());
      return 77;
    }
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "verbs_capture_bench: %s\n", e.what());
    return 1;
  }
}
