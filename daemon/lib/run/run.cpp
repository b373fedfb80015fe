#include "daemon/lib/run/run.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>

#include "capture/net/packet.hpp"
#include "config/summary.hpp"
#include "config/token_file.hpp"
#include "config/units.hpp"
#include "daemon/lib/consumers/start_consumers.hpp"
#include "daemon/lib/dumps/dump_service.hpp"
#include "daemon/lib/listeners/trigger_socket.hpp"
#include "daemon/lib/reporting/manifest_file.hpp"
#include "daemon/lib/reporting/manifest_writer.hpp"
#include "daemon/lib/reporting/metrics.hpp"
#include "daemon/lib/reporting/published.hpp"
#include "daemon/lib/reporting/report.hpp"
#include "daemon/lib/run/open_files.hpp"
#include "daemon/lib/run/run_attempt.hpp"
#include "daemon/lib/run/service_notifier.hpp"
#include "daemon/lib/run/signals.hpp"
#include "daemon/lib/run/writer_loop.hpp"
#include "daemon/lib/run/writer_pool.hpp"
#include "rundir/run_lock.hpp"
#include "writers/uring_queue.hpp"

#ifndef ROCECAP_VERSION
#define ROCECAP_VERSION "unknown"
#endif

namespace rocecap::daemon {
namespace {

using Clock = std::chrono::steady_clock;
// Rings of many streams are allocated, locked and prefaulted before READY=1: gigabytes can take
// tens of seconds, more than a default TimeoutStartSec leaves.
constexpr std::chrono::microseconds kStartupAllowance = std::chrono::seconds(120);

RunIdentity identity() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return {iso8601_utc(unix_now_ns()), host, ROCECAP_VERSION};
}

// Empty when written, else the error (logged). `failure` overrides the manifest's failure.
std::string save_manifest(const Manifest& m, ManifestFile& file, WriteErrors& errors,
                          spdlog::logger& log, bool durable = true) {
  const bool last = m.state == "stopped" || m.state == "failed";
  std::string err = file.write(m, last, durable);
  if (!err.empty()) {
    log.error("manifest: {}", err);
    // A snapshot lost (its target full, say) is a write error of the run like a broken data
    // file: the next manifest that is written lists it (the final one cannot list its own).
    list_error(errors, file.path().string(),
               "manifest snapshot not written to " + file.path().string() + ": " + err);
  }
  return err;
}

std::string save_manifest(Runtime& rt, ManifestFile& file, const RunIdentity& id,
                          const std::string& state, spdlog::logger& log,
                          const std::string& failure = {}) {
  Manifest m = snapshot(rt, id, state);
  if (!failure.empty()) m.failure = failure;
  return save_manifest(m, file, rt.write_errors, log);
}

// Storage loss (issue 16): the writer thread reports EIO and deleted files; the run directory
// itself is checked here twice a second, and so is every output target's identity (issue 23:
// unmounted, its run directory removed or replaced; a few stat calls per target): a lost
// target is taken out here, and each writer finds its files gone with it at its next storage
// check (RotatingFile::check_storage, once a second on the writer threads).
bool storage_lost(Runtime& rt, Clock::time_point now, Clock::time_point& next_check) {
  if (now >= next_check) {
    next_check = now + std::chrono::milliseconds(500);
    if (std::string why = rt.run_directory->check(); !why.empty()) rt.storage.report(why);
    rt.targets->check_identity();
  }
  return rt.storage.lost();
}

void pin_or_warn(std::optional<unsigned> cpu, const char* what, spdlog::logger& log) {
  std::string why;
  if (cpu && !pin_to_cpu(*cpu, why)) log.warn("{}: cannot pin to CPU {}: {}", what, *cpu, why);
}

std::vector<unsigned> writer_cpus(const config::RunConfig& cfg) {
  if (!cfg.output.writer_cpus.empty()) return cfg.output.writer_cpus;
  if (cfg.output.writer_cpu) return {*cfg.output.writer_cpu};
  return {};
}

// output.writer_threads (or its default) -> the threads' shares; logs how files are written.
WriterPlan plan_writers(Runtime& rt, spdlog::logger& log) {
  const config::OutputSection& out = rt.config->output;
  std::size_t streams = 0, shards = 0;
  for (const auto& ir : rt.interfaces) {
    streams += ir->streams.size();
    shards += ir->writer->splittable() ? ir->streams.size() : 1;
  }
  const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads =
      out.writer_threads != 0
          ? out.writer_threads
          : default_writer_threads(shards, streams, rt.targets ? rt.targets->size() : 1, cpus);
  WriterPlan plan;
  if (threads > 1) plan = plan_writer_pool(rt, threads);
  // The loader refuses more threads than streams (or pcap interfaces); GPU payload staging,
  // chosen only now with payload_memory auto, can leave fewer units than that: say so.
  if (out.writer_threads > std::max<std::size_t>(1, plan.size()))
    log.warn(
        "output.writer_threads {}: {} started; an interface with GPU payload staging is "
        "written whole by one thread",
        out.writer_threads, std::max<std::size_t>(1, plan.size()));
  const std::string direct = !out.direct_io  ? "off"
                             : !out.io_uring ? "write() (output.io_uring: false)"
                                             : writers::probe_io_engine().reason;
  const char* buffered = writers::writev_forced_off()
                             ? "copied (ROCECAP_WRITEV=off)"
                             : "writev from ring slots (copied where payloads are staged)";
  log.info("output writes: {} writer thread(s), O_DIRECT {}, buffered {}, preallocate {}",
           std::max<std::size_t>(1, plan.size()), direct, buffered, out.preallocate ? "on" : "off");
  return plan;
}

bool all_capture_done(const Runtime& rt) {
  for (const auto& ir : rt.interfaces) {
    if (!ir->progress.done.load(std::memory_order_acquire)) return false;
  }
  return true;
}

void log_start(const Runtime& rt, spdlog::logger& log) {
  std::size_t streams = 0;
  for (const auto& ir : rt.interfaces)
    streams += ir->streams.size();
  log.info("run {}: capturing {} streams on {} interface(s) ({}), files under {}",
           rt.config->run.name, streams, rt.interfaces.size(),
           config::to_string(rt.config->capture.backend), rt.run_dir.string());
}

// Waits for a reason to stop; logs status meanwhile. Returns the reason.
std::string wait_for_stop(Runtime& rt, SignalWatcher& signals, std::atomic<bool>& rotate,
                          const RunOptions& o, ServiceNotifier& notifier) {
  spdlog::logger& log = *o.log;
  const auto start = Clock::now();
  auto last_status = start;
  auto next_storage_check = start;
  StatusTotals totals;
  for (;;) {
    switch (signals.wait(std::chrono::milliseconds(100))) {
      case SignalWatcher::Event::stop:
        return signals.last_signal() == SIGINT ? "SIGINT" : "SIGTERM";
      case SignalWatcher::Event::rotate:
        log.info("SIGHUP: starting new files");
        rotate.store(true);
        break;
      case SignalWatcher::Event::none:
        break;
    }
    const auto now = Clock::now();
    notifier.tick(rt, now);
    log_source_events(rt, log);
    if (storage_lost(rt, now, next_storage_check)) return "storage lost";
    if (all_capture_done(rt)) return "capture ended";
    if (rt.config->run.duration && now - start >= *rt.config->run.duration) return "duration";
    if (now - last_status >= o.status_interval) {
      log_status(rt, log, std::chrono::duration<double>(now - last_status).count(), totals);
      last_status = now;
    }
  }
}

void linger(MetricsServer& metrics, SignalWatcher& signals, std::chrono::milliseconds how_long) {
  metrics.collector().set_state(RunState::stopped);
  const auto until = Clock::now() + how_long;
  while (Clock::now() < until) {
    if (signals.wait(std::chrono::milliseconds(100)) == SignalWatcher::Event::stop) return;
  }
}

// Received frames and pcap records written to files that were then lost with their output
// target (storage_lost).
uint64_t storage_lost_frames(Runtime& rt) {
  uint64_t n = 0;
  for (const auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s) {
      const writers::StreamWriters& w = ir->writer->writers(s);
      if (w.raw) n += w.raw->stats().storage_loss.frames;
      if (w.codifhdr) n += w.codifhdr->stats().storage_loss.frames;
      if (w.vdifhdr) n += w.vdifhdr->stats().storage_loss.frames;
    }
    if (const auto* pcap = ir->writer->pcap()) n += pcap->stats().storage_loss.frames;
  }
  return n;
}

// Once the writers are done: a target lost in the last moments (after the writers' last
// storage check) still has its files found gone and counted before the final manifest.
void final_storage_check(Runtime& rt) {
  rt.targets->check_identity();
  for (const auto& ir : rt.interfaces) {
    ir->writer->check_storage();
    publish_writer(*ir, unix_now_ns());
  }
}

// The run's storage failure for the final manifest and the log; empty: none. The run directory
// lost stops the run at once; files lost with one of several targets end it failed.
std::string storage_failure(Runtime& rt) {
  auto never = Clock::time_point{};
  if (storage_lost(rt, Clock::now(), never)) return "storage lost: " + rt.storage.why();
  const uint64_t n = storage_lost_frames(rt);
  if (n == 0 && !rt.storage.files_lost()) return {};
  return fmt::format(
      "storage lost: {} received frames and pcap records were written to files that were then "
      "lost with their output target (storage_lost; listed per stream in the manifest){}",
      n, rt.storage.files_lost() ? ": " + rt.storage.files_why() : std::string());
}

// Received frames and pcap records that write errors kept out of every file of their format.
uint64_t write_error_lost(Runtime& rt) {
  uint64_t n = 0;
  for (const auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s) {
      const writers::StreamWriters& w = ir->writer->writers(s);
      if (w.raw) n += w.raw->stats().write_loss.frames;
      if (w.codifhdr) n += w.codifhdr->stats().write_loss.frames;
      if (w.vdifhdr) n += w.vdifhdr->stats().write_loss.frames;
    }
    if (const auto* pcap = ir->writer->pcap()) n += pcap->stats().write_loss.frames;
  }
  return n;
}

// What the run asked for and did not record, for its last line; empty: nothing. Frames a write
// error kept out of the files, and triggered dumps that could not be written.
std::string not_whole(Runtime& rt) {
  std::string what;
  if (const uint64_t n = write_error_lost(rt); n != 0) {
    what = fmt::format(
        "{} received frames not written (write_error; listed per stream in the "
        "manifest)",
        n);
  }
  if (const uint64_t n = rt.dump_counters ? rt.dump_counters->failed.load() : 0; n != 0) {
    what += fmt::format("{}{} triggered dump{} failed (the manifest's triggers say why)",
                        what.empty() ? "" : " and ", n, n == 1 ? "" : "s");
  }
  return what;
}

// Triggered dumps (doc/dumps.md): the service over every stream's retention and its socket.
struct Dumps {
  std::unique_ptr<DumpService> service;
  std::unique_ptr<TriggerSocket> socket;
};

Dumps start_dumps(Runtime& rt, MetricsServer* metrics, spdlog::logger& log) {
  Dumps d;
  const config::RunConfig& cfg = *rt.config;
  if (!cfg.retention.enabled) return d;
  std::vector<DumpStream> streams;
  for (const auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s) {
      const capture::StreamSpec& spec = ir->streams[s]->spec();
      streams.push_back(
          {ir->refs[s], ir->streams[s]->retention.get(), spec.syncs, spec.format, spec.vdif});
    }
  }
  DumpServiceOptions o;
  o.cuda_device = rt.payload.kind == capture::memory::MemoryKind::gpu ? rt.payload.gpu : -1;
  o.targets = rt.targets;  // dumps are placed, and spill, as the run's files
  o.log = [&log](DumpLogLevel level, const std::string& line) {
    if (level == DumpLogLevel::error) return log.error("{}", line);
    if (level == DumpLogLevel::warn) return log.warn("{}", line);
    log.info("{}", line);
  };
  d.service = std::make_unique<DumpService>(cfg, rt.run_dir, std::move(streams), o);
  if (!cfg.retention.http_token_file.empty()) {
    const std::string warning = config::read_token_file(cfg.retention.http_token_file).warning;
    if (!warning.empty()) log.warn("retention.http_token_file {}", warning);
  }
  const std::string path =
      cfg.retention.socket.empty() ? (rt.run_dir / "trigger.sock").string() : cfg.retention.socket;
  DumpService* service = d.service.get();
  d.socket = std::make_unique<TriggerSocket>(
      path, [service](const std::string& r) { return service->handle(r).dump(); });
  rt.trigger_log = [service] { return service->trigger_log(); };
  if (metrics) {  // POST /trigger on the metrics listener; the token, when set, is required
    metrics->http().show_listener("trigger_socket", d.socket->counters());
    metrics->http().set_trigger_handler(
        [service](const std::string& body, const std::string& bearer) {
          return service->handle(body, true, bearer).dump();
        });
    // GET /trigger/<id>: a status request, the token checked as for a trigger.
    metrics->http().set_status_handler([service](uint64_t id, const std::string& bearer) {
      return service->handle(nlohmann::json{{"status", id}}.dump(), true, bearer).dump();
    });
    // Anyone who can reach a non-loopback listener could start dumps (disk, pinned rings).
    if (config::trigger_exposed_without_token(cfg))
      log.warn(
          "POST /trigger on metrics.listen {} takes dumps from anyone who can reach this host: "
          "set retention.http_token_file",
          capture::net::format_ipv4(cfg.metrics.address).data());
  }
  rt.dump_counters = &service->counters();
  log.info("retention: the last {} of every stream kept; triggers on {} (rocecap trigger)",
           config::format_duration(cfg.retention.retain), path);
  return d;
}

// At the stop: no new trigger; future windows are cut short; queued dumps are written from
// what the rings retain (they stay allocated until the run's end).
void finish_dumps(Runtime& rt, Dumps& d, spdlog::logger& log) {
  if (!d.service) return;
  d.socket.reset();
  d.service->stop();
  log.info("retention: writing the dumps still queued");
  d.service->wait_idle();
  (void)rt;
}

}  // namespace

int run(const config::RunConfig& cfg, const RunOptions& o) {
  spdlog::logger& log = *o.log;
  SignalWatcher signals;  // before any thread, so all of them inherit the blocked mask
  const int64_t process_start_ns = unix_now_ns();
  const RunIdentity id = identity();
  ServiceNotifier notifier;
  notifier.extend_startup(kStartupAllowance);
  if (const OpenFilesNote n = raise_open_files_limit(); !n.words.empty()) {
    if (n.warning)
      log.warn("{}", n.words);
    else
      log.info("{}", n.words);
  }
  // Locked (and recovered, after a crash) before anything else: a second daemon on the same
  // run stops here, naming the first one's PID.
  RunAttempt dir;
  std::unique_ptr<Runtime> rt;
  Dumps dumps;                             // after rt: it reads the rings until destroyed
  Consumers consumers;                     // after rt: its service pins the rings
  std::unique_ptr<MetricsServer> metrics;  // after rt and dumps: it reads both until destroyed
  try {
    dir = begin_attempt(cfg, ROCECAP_VERSION, log);
    rt = build_runtime(
        cfg, o.log, [&dir](const std::string& f) { return dir.first_seq(f); },
        dir.unavailable_targets);
    rt->attempt = dir.attempt;
    metrics = start_metrics(*rt, ROCECAP_VERSION, process_start_ns);
    dumps = start_dumps(*rt, metrics.get(), log);
    consumers = start_consumers(*rt, log);
    if (metrics && consumers.service) metrics->collector().set_consumers(consumers.service.get());
  } catch (const std::exception& e) {
    const bool in_use = dynamic_cast<const rundir::RunDirInUse*>(&e) != nullptr;
    log.critical("cannot start: {}", e.what());
    metrics.reset();
    consumers = Consumers{};
    dumps = Dumps{};
    rt.reset();
    abandon_attempt(dir);
    return in_use ? kExitRunInUse : kExitStartup;
  }
  if (metrics)
    log.info("metrics on http://{}:{}/metrics",
             capture::net::format_ipv4(cfg.metrics.address).data(), metrics->port());
  if (metrics && config::metrics_exposed(cfg.metrics))
    log.warn(
        "metrics.listen {} is not a loopback address: anyone who can reach this host can "
        "read the run's metrics; use 127.0.0.1 behind a proxy or a firewall",
        capture::net::format_ipv4(cfg.metrics.address).data());
  ManifestFile manifest(rt->run_dir);
  if (!dir.previous.is_null()) manifest.continue_run(std::move(dir.previous), dir.attempt);
  save_manifest(*rt, manifest, id, "running", log);
  log_start(*rt, log);

  std::atomic<bool> stop{false}, rotate{false};
  WriterLoopOptions wo;
  wo.manifest_interval = o.manifest_interval;
  // The writer thread only takes the snapshot; the manifest thread writes it, without fsync.
  // An fsync makes the device flush its cache: on the VM measured it took 0.2-2.5 s under the
  // run's O_DIRECT writes, and the disk took none of them meanwhile (on the writer thread, every
  // ring also stopped draining), so the rings overflowed at 5 Gb/s at every interval. The
  // manifest at start and the final one stay durable (reporting/atomic_file.hpp).
  ManifestWriter running_manifest([&](const Manifest& m) {
    return save_manifest(m, manifest, rt->write_errors, log, /*durable=*/false);
  });
  wo.write_manifest = [&] { running_manifest.post(snapshot(*rt, id, "running")); };
  const WriterPlan plan = plan_writers(*rt, log);
  wait_for_consumers(consumers, cfg.consumers.wait_for,
                     std::chrono::duration_cast<std::chrono::milliseconds>(cfg.consumers.wait_time),
                     log);
  std::thread writer([&] {
    if (plan.size() > 1) return run_writer_pool(*rt, plan, rotate, wo, writer_cpus(cfg), log);
    // Named threads: visible in top -H, ps -L and /proc/<pid>/task/*/comm.
    pthread_setname_np(pthread_self(), "rc-writer");
    pin_or_warn(cfg.output.writer_cpu, "writer thread", log);
    writer_loop(*rt, rotate, wo);
  });
  CaptureLoopOptions co;
  co.packet_limit = cfg.run.packets.value_or(0);
  std::vector<std::thread> capture;
  for (auto& ir : rt->interfaces) {
    capture.emplace_back([&, iface = ir.get()] {
      pthread_setname_np(pthread_self(), ("rc-cap-" + iface->name).substr(0, 15).c_str());
      pin_or_warn(iface->capture_cpu, "capture thread", log);
      capture_loop(*rt, *iface, stop, co);
    });
  }

  if (metrics) metrics->collector().set_state(RunState::running);
  notifier.ready(*rt);
  const std::string reason = wait_for_stop(*rt, signals, rotate, o, notifier);
  notifier.stopping(reason);
  if (metrics) metrics->collector().set_state(RunState::stopping);
  log.info("stopping: {}; draining rings and closing files", reason);
  stop.store(true);
  // No pcap_breakloop: each loop sees the flag within one capture timeout (100 ms) and then
  // drains what the kernel already holds, which a break would cut short.
  for (auto& t : capture)
    t.join();
  writer.join();
  running_manifest.stop();  // the final manifest below is written here, after the last snapshot
  consumers.end();
  final_storage_check(*rt);
  finish_dumps(*rt, dumps, log);

  log_source_events(*rt, log);  // an error of the last moments, logged before the outcome
  bool failed = false;
  for (const auto& ir : rt->interfaces) {
    if (ir->progress.failed.load()) {
      failed = true;
      log.error("capture on {} failed: {}", ir->name, ir->progress.error);
    }
  }
  log_final_summary(*rt, log);
  // --- storage loss (issues 16, 23): a run that could not be recorded never ends "complete" ---
  const std::string failure = storage_failure(*rt);
  const bool lost = !failure.empty();
  const std::string manifest_error =
      save_manifest(*rt, manifest, id, failed || lost ? "failed" : "stopped", log, failure);
  if (lost || !manifest_error.empty()) {
    log.critical(
        "run {} NOT recorded as asked: {}; manifest {}", cfg.run.name,
        lost ? failure : "the final manifest could not be written",
        !manifest_error.empty()
            ? "not written (" + manifest_error + ")"
            : "written into the run directory as opened at the start (not necessarily at " +
                  manifest.path().string() + " any more)");
    if (metrics) linger(*metrics, signals, o.metrics_linger);
    return kExitStorageLost;
  }
  if (const std::string what = not_whole(*rt); !what.empty() && !failed) {
    // Recorded, but not whole: not called "complete" (exit 0: the run ended as configured).
    log.warn("run {} ended with {}; manifest {}", cfg.run.name, what, manifest.path().string());
    if (metrics) linger(*metrics, signals, o.metrics_linger);
    return kExitOk;
  }
  // --- end storage loss ---
  log.info("run {} {}; manifest {}", cfg.run.name, failed ? "failed" : "complete",
           manifest.path().string());
  if (metrics) linger(*metrics, signals, o.metrics_linger);
  return failed ? kExitCaptureFailed : kExitOk;
}

}  // namespace rocecap::daemon
