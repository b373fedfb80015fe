#include "daemon/lib/run/run_assembly.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include "capture/memory/gpu_memory.hpp"
#include "capture/memory/nic_numa.hpp"
#include "config/name_template.hpp"
#include "config/retention_plan.hpp"
#include "config/units.hpp"
#include "daemon/lib/reporting/atomic_file.hpp"
#include "daemon/lib/run/run.hpp"
#include "daemon/lib/run/source_factory.hpp"
#include "writers/fault_injection.hpp"
#include "writers/output_path.hpp"
#include "writers/output_targets.hpp"
#include "writers/pcap_buffer.hpp"
#include "writers/staging/engine_factory.hpp"

namespace rocecap::daemon {
namespace {

namespace fs = std::filesystem;
namespace mem = capture::memory;
using config::OutputFormat;

capture::StreamSpec stream_spec(const config::RunConfig& cfg, const config::StreamRef& ref) {
  const auto& iface = cfg.capture.interfaces[ref.interface];
  capture::StreamSpec s;
  s.key = {iface.groups[ref.group].address, iface.groups[ref.group].port,
           cfg.streams.antennas[ref.antenna].source};
  s.format = cfg.streams.format == config::StreamFormat::udp ? capture::StreamFormat::udp
                                                             : capture::StreamFormat::codif;
  s.syncs = sync_set(cfg.streams);
  if (cfg.streams.format == config::StreamFormat::vdif) s.format = capture::StreamFormat::vdif;
  s.vdif.rate = {cfg.streams.frames_per_second, cfg.streams.sample_rate};
  s.vdif.vtp = cfg.streams.vtp;
  if (!cfg.streams.threads.empty()) s.vdif.thread = cfg.streams.threads.at(ref.thread);
  s.ring.slots = cfg.capture.ring_depth;
  // Retention (doc/dumps.md): ring_depth slots for capture as always, plus the retained frames
  // and the pin headroom of triggered dumps.
  if (config::keeps_frames(cfg)) {
    s.ring.slots = static_cast<uint32_t>(config::plan_retention(cfg).ring_slots);
  }
  s.ring.header_slot_bytes = cfg.capture.header_split;
  s.ring.payload_slot_bytes = cfg.capture.max_frame - cfg.capture.header_split;
  s.ring.payload_align = cfg.output.direct_io ? 4096 : 64;
  // Header slabs and host payload slabs on the NIC's node (preferred, never fatal).
  s.ring.memory.numa_node = mem::nic_numa_node("/sys", iface.name);
  s.sequencer.reorder_window = std::max<uint32_t>(1, cfg.output.reorder_window);
  s.sequencer.history = std::max<uint32_t>(4096, std::bit_ceil(4 * s.sequencer.reorder_window));
  // A jump of more frames than this is a resynchronisation, not that many fill frames
  // (131072 frames of 8 KiB would already be 1 GiB of zeros).
  s.sequencer.resync_frames = 1u << 17;
  return s;
}

// The names of a writer's files relative to each target (the run file's templates).
writers::NameMaker stream_names(const config::RunConfig& cfg, config::StreamRef ref,
                                OutputFormat format) {
  return
      [&cfg, ref, format](uint64_t seq) { return config::stream_file_name(cfg, ref, format, seq); };
}

writers::NameMaker pcap_names(const config::RunConfig& cfg, std::size_t iface) {
  return [&cfg, iface](uint64_t seq) { return config::pcap_file_name(cfg, iface, seq); };
}

writers::PathMaker stream_paths(const config::RunConfig& cfg, config::StreamRef ref,
                                OutputFormat format) {
  return [&cfg, ref, format](uint64_t seq, fs::path& out) {
    return writers::place_in_directory(cfg.output.directory,
                                       config::stream_file_name(cfg, ref, format, seq), out);
  };
}

writers::PathMaker pcap_paths(const config::RunConfig& cfg, std::size_t iface) {
  return [&cfg, iface](uint64_t seq, fs::path& out) {
    return writers::place_in_directory(cfg.output.directory,
                                       config::pcap_file_name(cfg, iface, seq), out);
  };
}

writers::RotationOptions rotation(const config::RunConfig& cfg, uint64_t first_seq,
                                  const Runtime& rt, writers::NameMaker names) {
  writers::RotationOptions r;
  r.targets = rt.targets;
  r.names = std::move(names);
  r.first_seq = first_seq;
  r.max_bytes = cfg.output.rotate_bytes;
  r.output.direct = cfg.output.direct_io;
  r.io_uring = cfg.output.io_uring;
  r.preallocate = cfg.output.preallocate;
  r.fsync_rotated = cfg.output.fsync_rotated;
  return r;
}

// Several targets: files that vanished (unlinked, gone with their target: ENOENT) are the loss
// of those files and of their target for this run, and the run goes on on the others (exit 5
// at its end, the run then not recorded as asked; at once only for the run directory itself,
// RunDirectory's check, and for every target failing).
bool target_file_lost(const Runtime& rt, const writers::Status& s) {
  return rt.targets && rt.targets->size() > 1 && s.code() == ENOENT &&
         rt.targets->target_of(s.path()).has_value();
}

void build_writer(Runtime& rt, InterfaceRuntime& ir, std::size_t iface,
                  const std::shared_ptr<spdlog::logger>& log, const FirstSeq& first_seq) {
  const auto first = [&](const std::string& file0) -> uint64_t {
    return first_seq ? first_seq(file0) : 0;
  };
  const config::RunConfig& cfg = *rt.config;
  const bool udp = cfg.streams.format == config::StreamFormat::udp;
  std::vector<writers::StreamWriters> per_stream(ir.refs.size());
  for (std::size_t s = 0; s < ir.refs.size(); ++s) {
    if (config::has_format(cfg.output, OutputFormat::raw)) {
      writers::RawOptions raw;
      raw.strip_headers = cfg.output.strip_headers || udp;  // udp: payloads, no CODIF header
      per_stream[s].raw.emplace(
          stream_paths(cfg, ir.refs[s], OutputFormat::raw),
          rotation(cfg, first(config::stream_file_name(cfg, ir.refs[s], OutputFormat::raw, 0)), rt,
                   stream_names(cfg, ir.refs[s], OutputFormat::raw)),
          raw);
    }
    if (config::has_format(cfg.output, OutputFormat::vdifhdr)) {
      per_stream[s].vdifhdr.emplace(
          stream_paths(cfg, ir.refs[s], OutputFormat::vdifhdr),
          rotation(cfg, first(config::stream_file_name(cfg, ir.refs[s], OutputFormat::vdifhdr, 0)),
                   rt, stream_names(cfg, ir.refs[s], OutputFormat::vdifhdr)));
    }
    if (config::has_format(cfg.output, OutputFormat::codifhdr)) {
      per_stream[s].codifhdr.emplace(
          stream_paths(cfg, ir.refs[s], OutputFormat::codifhdr),
          rotation(cfg, first(config::stream_file_name(cfg, ir.refs[s], OutputFormat::codifhdr, 0)),
                   rt, stream_names(cfg, ir.refs[s], OutputFormat::codifhdr)));
    }
  }
  std::optional<writers::PcapWriter> pcap;
  if (config::has_format(cfg.output, OutputFormat::pcap)) {
    writers::RotationOptions ro =
        rotation(cfg, first(config::pcap_file_name(cfg, iface, 0)), rt, pcap_names(cfg, iface));
    const std::size_t base = ro.buffer_bytes;
    ro.buffer_bytes = writers::pcap_buffer_bytes(base, ir.refs.size(), ro.output.direct);
    if (ro.output.direct) {
      log->info("{}: pcap file with O_DIRECT: {} KiB per write, the buffers of {} streams", ir.name,
                ro.buffer_bytes >> 10, ro.buffer_bytes / base);
    }
    pcap.emplace(pcap_paths(cfg, iface), ro);
  }
  writers::CaptureWriterOptions opts;
  opts.fill_gaps = cfg.output.fill_gaps && !udp;
  opts.staging.cuda_device = rt.payload.gpu;  // where GpuMemory puts the payload slabs
  // Runs on the writer thread, once per broken file.
  auto on_error = [&rt, log](const writers::Status& s) {
    if (target_file_lost(rt, s)) {
      log->error(
          "storage lost: {} (the target is out of rotation; the run goes on on the others and "
          "ends failed, exit {})",
          s.message(), kExitStorageLost);
      rt.storage.report_files_lost(s.message());
    } else if (writers::is_storage_loss(s.code())) {
      log->critical("storage lost: {} (the run stops; exit {})", s.message(), kExitStorageLost);
      rt.storage.report(s.message());
    } else {
      log->error(
          "write error: {} (capture goes on; the writer retries into a new file; "
          "files written before stay valid)",
          s.message());
    }
    list_error(rt.write_errors, s.path().string(), s.message());
  };
  ir.writer.emplace(ir.ingest->streams(), ir.ingest->arrivals(), std::move(per_stream),
                    std::move(pcap), opts, on_error);
  if (const auto* stager = ir.writer->stager()) {
    log->info("{}: payloads staged to host memory by {}, 2 x {} byte buffers", ir.name,
              stager->engine().describe(), stager->buffer_bytes());
  }
}

// The effective layout, as capture hosts report it: which memory, which node, huge pages, locked.
void log_ring_memory(const InterfaceRuntime& ir, const std::shared_ptr<spdlog::logger>& log) {
  if (ir.streams.empty()) return;
  const capture::StreamRing& ring = ir.streams.front()->ring();
  const int node = ir.streams.front()->spec().ring.memory.numa_node;
  const capture::memory::PayloadMemory& pm = ring.payload_memory();
  std::string payload = std::string(capture::memory::to_string(pm.kind())) + " memory";
  if (const auto* host = dynamic_cast<const capture::memory::HostMemory*>(&pm))
    payload = host->describe();
  if (const auto* gpu = dynamic_cast<const mem::GpuMemory*>(&pm)) payload = gpu->describe();
  log->info("interface {}: {} rings; NIC NUMA node {}; per ring: header slab {}; payload slab {}",
            ir.name, ir.streams.size(), node < 0 ? std::string("unknown") : std::to_string(node),
            ring.header_memory().describe(), payload);
}

mem::PayloadChoice choose_payload(const config::RunConfig& cfg) {
  const auto request =
      cfg.capture.payload_memory == config::PayloadMemory::gpu    ? mem::PayloadRequest::gpu
      : cfg.capture.payload_memory == config::PayloadMemory::host ? mem::PayloadRequest::host
                                                                  : mem::PayloadRequest::automatic;
  mem::PayloadFacts facts;
  backend_payload_facts(
      cfg,
      [&cfg](const config::StreamRef& ref) {
        return capture::StreamRing::payload_bytes_needed(stream_spec(cfg, ref).ring);
      },
      facts);
  // GPU payload slots reach the files through the writers' CUDA copy engine (writers/staging).
  facts.writers_stage = writers::staging::cuda_engine_built();
  if (facts.nic_scatters && request != mem::PayloadRequest::host) {
    // capture.gpu, or the GPU nearest the capture NICs in the PCIe tree / NUMA (gpu_choice.hpp).
    std::vector<std::string> nics;
    for (const auto& ic : cfg.capture.interfaces)
      nics.push_back(ic.name);
    facts.gpu = mem::probe_chosen_gpu(nics, cfg.capture.gpu, "/sys");
  }
  return mem::choose_payload_memory(request, facts);
}

std::unique_ptr<capture::memory::PayloadMemory> payload_slab(const Runtime& rt,
                                                             const capture::StreamSpec& spec) {
  if (rt.payload.kind != capture::memory::MemoryKind::gpu) return nullptr;  // the ring's HostMemory
  return std::make_unique<mem::GpuMemory>(capture::StreamRing::payload_bytes_needed(spec.ring),
                                          rt.payload.gpu);
}

// Every target but the first gets <target>/<run.name>/rocecap-target.json naming the run and
// where its manifest (and lock) are, so a directory found on a disk alone says which run it
// belongs to and where the rest of that run is.
void mark_targets(const config::RunConfig& cfg, const writers::OutputTargets& targets,
                  const std::vector<std::string>& unavailable) {
  nlohmann::json dirs = nlohmann::json::array();
  for (std::size_t t = 0; t < targets.size(); ++t)
    dirs.push_back(targets.directory(t).string());
  const fs::path manifest = targets.directory(0) / cfg.run.name / "manifest.json";
  for (std::size_t t = 1; t < targets.size(); ++t) {
    if (!unavailable[t].empty()) continue;  // never touched in this attempt
    fs::path path;
    if (writers::Status s = writers::place_in_directory(targets.directory(t),
                                                        cfg.run.name + "/" + kTargetMarker, path);
        !s) {
      throw std::runtime_error("output target " + std::to_string(t) + ": " + s.message());
    }
    const nlohmann::json marker = {
        {"run", cfg.run.name}, {"target", t}, {"targets", dirs}, {"manifest", manifest.string()}};
    if (std::string err = replace_file_atomically(path.string(), marker.dump(2) + "\n");
        !err.empty()) {
      throw std::runtime_error("output target " + std::to_string(t) + ": " + err);
    }
  }
}

// ROCECAP_FAULT_EIO (writers/fault_injection.hpp): a test seam making one output target answer
// EIO mid-run. Read once, here; refused unless it names one of the run's targets exactly, and
// logged as an error so that no run passes for a normal one with it set.
void install_fault_injection(const std::vector<fs::path>& dirs, spdlog::logger& log) {
  const char* value = std::getenv(writers::fault::kEnvironment);
  if (value == nullptr) return;
  const std::string setting = std::string(writers::fault::kEnvironment) + "=" + value;
  std::string error;
  const auto spec = writers::fault::parse(value, error);
  if (!spec) throw std::runtime_error(setting + ": " + error);
  if (std::none_of(dirs.begin(), dirs.end(), [&](const fs::path& d) {
        return (d / "").lexically_normal() == (spec->directory / "").lexically_normal();
      })) {
    throw std::runtime_error(setting + ": " + spec->directory.string() +
                             " is not one of the output targets");
  }
  writers::fault::install(*spec);
  log.error("fault injection active ({}, a test seam, never for a real run): {}", setting,
            writers::fault::describe(*spec));
}

// Per target: why it is left out of this attempt (empty: it is not), logged.
std::vector<std::string> unavailable_reasons(const std::vector<fs::path>& dirs,
                                             const UnavailableTargets& unavailable,
                                             spdlog::logger& log) {
  std::vector<std::string> out(dirs.size());
  for (std::size_t t = 1; t < dirs.size(); ++t) {
    const auto it = unavailable.find(target_key(dirs[t]));
    if (it == unavailable.end()) continue;
    out[t] = "could not be read for recovery at this restart (" + it->second +
             "): left out of rotation for this attempt, not re-created";
    log.error(
        "output target {} ({}) left out of rotation for this attempt: it could not be read for "
        "recovery ({}); it is not re-created and nothing of this attempt is written there",
        t, dirs[t].string(), it->second);
  }
  return out;
}

// output.directories (or output.directory): each target's state changes are logged once.
std::shared_ptr<writers::OutputTargets> make_targets(const config::RunConfig& cfg,
                                                     const std::shared_ptr<spdlog::logger>& log,
                                                     const UnavailableTargets& unavailable) {
  std::vector<fs::path> dirs;
  for (const std::string& d : cfg.output.directories)
    dirs.emplace_back(d);
  if (dirs.empty()) dirs.emplace_back(cfg.output.directory);
  writers::TargetOptions o;
  o.unavailable = unavailable_reasons(dirs, unavailable, *log);
  for (std::size_t t = 0; t < dirs.size(); ++t) {
    if (!o.unavailable[t].empty()) continue;
    if (writers::Status s = writers::make_directories(dirs[t]); !s)
      throw std::runtime_error(s.message());
  }
  install_fault_injection(dirs, *log);
  // A full target comes back with room for a few files (at most 64 MiB, at least 4 MiB).
  o.recover_bytes = std::clamp<uint64_t>(2 * cfg.output.rotate_bytes, 4u << 20, 64u << 20);
  // Each target's run directory is held open with it: its removal is the target's loss.
  o.run_directory = cfg.run.name;
  const std::vector<std::string> left_out = o.unavailable;
  auto targets = std::make_shared<writers::OutputTargets>(std::move(dirs), o);
  if (targets->size() > 1) {
    for (std::size_t t = 0; t < targets->size(); ++t)
      log->info("output target {}: {}", t, targets->directory(t).string());
    mark_targets(cfg, *targets, left_out);
  }
  targets->set_observer([log, dirs = cfg.output.directories](
                            std::size_t t, writers::TargetState state, const std::string& why) {
    const std::string dir = t < dirs.size() ? dirs[t] : std::string("?");
    if (state == writers::TargetState::active) {
      log->warn("output target {} ({}) back in rotation: {}", t, dir, why);
    } else {
      log->error(
          "output target {} ({}) out of rotation ({}): {}; new files go to the other "
          "targets, the data that did not reach it too",
          t, dir, writers::to_string(state), why);
    }
  });
  return targets;
}

void add_retention(const config::RunConfig& cfg, capture::StreamPipeline& sp) {
  sp.retention = std::make_unique<capture::Retention>(
      sp.ring(), static_cast<uint32_t>(config::plan_retention(cfg).keep_frames));
}

}  // namespace

capture::codif::SyncSet sync_set(const config::StreamsSection& s) {
  if (s.sync.empty()) return capture::codif::SyncSet::defaults();
  capture::codif::SyncSet set;
  for (const auto& w : s.sync) {
    set.add(w.word, w.layout == config::CodifLayout::v1 ? capture::codif::Layout::v1
                                                        : capture::codif::Layout::v3);
  }
  return set;
}

void list_error(WriteErrors& errors, const std::string& path, const std::string& message) {
  // Writer pool: several threads may report; errors are rare (once per broken file).
  const std::lock_guard lock(errors.mutex);
  if (errors.errors.size() < WriteErrors::kMaxListed) {
    errors.errors.push_back({path, message});
  } else {
    ++errors.not_listed;
  }
}

std::string target_key(const fs::path& directory) {
  std::string d = directory.lexically_normal().string();
  while (d.size() > 1 && d.back() == '/')
    d.pop_back();
  return d;
}

std::unique_ptr<Runtime> build_runtime(const config::RunConfig& cfg,
                                       const std::shared_ptr<spdlog::logger>& log,
                                       const FirstSeq& first_seq,
                                       const UnavailableTargets& unavailable) {
  check_backend(cfg);
  auto rt = std::make_unique<Runtime>();
  rt->config = &cfg;
  // Timed because the GPU registration trial (every slab of the run allocated and registered
  // at once) is start-up time an operator may want to budget for.
  const auto choosing = std::chrono::steady_clock::now();
  rt->payload = choose_payload(cfg);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - choosing;
  log->info("payload memory: {} ({}); chosen in {:.3f} s",
            capture::memory::to_string(rt->payload.kind), rt->payload.reason, took.count());
  prepare_backend(cfg, rt->payload.kind);
  rt->run_dir = fs::path(cfg.output.directory) / cfg.run.name;
  rt->run_directory = std::make_unique<RunDirectory>(cfg.output.directory, rt->run_dir);
  rt->targets = make_targets(cfg, log, unavailable);

  const auto refs = config::enumerate_streams(cfg);
  const bool record_arrivals = config::has_format(cfg.output, OutputFormat::pcap);
  for (std::size_t i = 0; i < cfg.capture.interfaces.size(); ++i) {
    const auto& ic = cfg.capture.interfaces[i];
    auto ir = std::make_unique<InterfaceRuntime>();
    ir->name = ic.name;
    ir->capture_cpu = ic.capture_cpu;
    std::vector<capture::StreamPipeline*> ptrs;
    for (const auto& ref : refs) {
      if (ref.interface != i) continue;
      ir->refs.push_back(ref);
      const capture::StreamSpec spec = stream_spec(cfg, ref);
      ir->streams.push_back(
          std::make_unique<capture::StreamPipeline>(spec, payload_slab(*rt, spec)));
      if (config::keeps_frames(cfg)) add_retention(cfg, *ir->streams.back());
      ptrs.push_back(ir->streams.back().get());
    }
    ir->ingest = std::make_unique<capture::Ingest>(ptrs, record_arrivals);
    if (cfg.run.start) {
      ir->ingest->set_start(*cfg.run.start);
      log->info("{}: frames before {} are not part of the run (run.start: before_start)", ic.name,
                config::format_utc_second(*cfg.run.start));
    }
    log_ring_memory(*ir, log);
    build_writer(*rt, *ir, i, log, first_seq);
    prepare_published(*ir);
    rt->interfaces.push_back(std::move(ir));
  }
  // Sources last: from here on packets are being buffered for us.
  for (std::size_t i = 0; i < cfg.capture.interfaces.size(); ++i) {
    open_source(cfg, i, *rt->interfaces[i], log);
  }
  return rt;
}

}  // namespace rocecap::daemon
