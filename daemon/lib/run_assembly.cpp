#include "daemon/lib/run_assembly.hpp"

#include <spdlog/spdlog.h>

#include <bit>
#include <stdexcept>

#include "capture/memory/gpu_memory.hpp"
#include "capture/memory/nic_numa.hpp"
#include "config/name_template.hpp"
#include "config/retention_plan.hpp"
#include "daemon/lib/privileges.hpp"
#include "daemon/lib/run.hpp"
#include "writers/output_path.hpp"
#include "writers/staging/engine_factory.hpp"
#ifdef ROCECAP_HAVE_VERBS
#include "capture/verbs/device_finder.hpp"
#include "capture/verbs/payload_registration.hpp"
#endif

namespace rocecap::daemon {
namespace {

namespace fs = std::filesystem;
namespace mem = capture::memory;
using config::OutputFormat;

capture::codif::SyncSet sync_set(const config::StreamsSection& s) {
  if (s.sync.empty()) return capture::codif::SyncSet::defaults();
  capture::codif::SyncSet set;
  for (const auto& w : s.sync) {
    set.add(w.word, w.layout == config::CodifLayout::v1 ? capture::codif::Layout::v1
                                                        : capture::codif::Layout::v3);
  }
  return set;
}

capture::StreamSpec stream_spec(const config::RunConfig& cfg, const config::StreamRef& ref) {
  const auto& iface = cfg.capture.interfaces[ref.interface];
  capture::StreamSpec s;
  s.key = {iface.groups[ref.group].address, iface.groups[ref.group].port,
           cfg.streams.antennas[ref.antenna].source};
  s.format = cfg.streams.format == config::StreamFormat::udp ? capture::StreamFormat::udp
                                                             : capture::StreamFormat::codif;
  s.syncs = sync_set(cfg.streams);
  s.ring.slots = cfg.capture.ring_depth;
  // Retention (doc/dumps.md): ring_depth slots for capture as always, plus the retained frames
  // and the pin headroom of triggered dumps.
  if (cfg.retention.enabled) {
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

writers::RotationOptions rotation(const config::RunConfig& cfg, uint64_t first_seq) {
  writers::RotationOptions r;
  r.first_seq = first_seq;
  r.max_bytes = cfg.output.rotate_bytes;
  r.output.direct = cfg.output.direct_io;
  return r;
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
          rotation(cfg, first(config::stream_file_name(cfg, ir.refs[s], OutputFormat::raw, 0))),
          raw);
    }
    if (config::has_format(cfg.output, OutputFormat::codifhdr)) {
      per_stream[s].codifhdr.emplace(
          stream_paths(cfg, ir.refs[s], OutputFormat::codifhdr),
          rotation(cfg,
                   first(config::stream_file_name(cfg, ir.refs[s], OutputFormat::codifhdr, 0))));
    }
  }
  std::optional<writers::PcapWriter> pcap;
  if (config::has_format(cfg.output, OutputFormat::pcap)) {
    pcap.emplace(pcap_paths(cfg, iface),
                 rotation(cfg, first(config::pcap_file_name(cfg, iface, 0))));
  }
  writers::CaptureWriterOptions opts;
  opts.fill_gaps = cfg.output.fill_gaps && !udp;
  opts.staging.cuda_device = rt.payload.gpu;  // where GpuMemory puts the payload slabs
  // Runs on the writer thread, once per broken file.
  auto on_error = [&rt, log](const writers::Status& s) {
    if (writers::is_storage_loss(s.code())) {
      log->critical("storage lost: {} (the run stops; exit {})", s.message(), kExitStorageLost);
      rt.storage.report(s.message());
    } else {
      log->error(
          "write error: {} (capture goes on; the writer retries into a new file; "
          "files written before stay valid)",
          s.message());
    }
    if (rt.write_errors.errors.size() < WriteErrors::kMaxListed) {
      rt.write_errors.errors.push_back({s.path().string(), s.message()});
    } else {
      ++rt.write_errors.not_listed;
    }
  };
  ir.writer.emplace(*ir.ingest, std::move(per_stream), std::move(pcap), opts, on_error);
  if (const auto* stager = ir.writer->stager()) {
    log->info("{}: payloads staged to host memory by {}, 2 x {} byte buffers", ir.name,
              stager->engine().describe(), stager->buffer_bytes());
  }
}

std::vector<uint32_t> group_addresses(const config::InterfaceConfig& ic) {
  std::vector<uint32_t> groups;
  for (const auto& g : ic.groups)
    groups.push_back(g.address);
  return groups;
}

#ifdef ROCECAP_HAVE_VERBS
const char* time_source_text(capture::verbs::TimeSource t) {
  switch (t) {
    case capture::verbs::TimeSource::nic_wallclock:
      return "NIC hardware completion timestamps (the NIC's PTP hardware clock as libmlx5 "
             "reports it, mapped to CLOCK_REALTIME with an offset measured every second; host "
             "time until the first measurement)";
    case capture::verbs::TimeSource::nic_raw_clock:
      return "NIC hardware completion timestamps (raw HCA clock, converted with a fit against "
             "CLOCK_REALTIME refreshed every second)";
    case capture::verbs::TimeSource::software:
      break;
  }
  return "no NIC completion timestamps: software receive time (one clock read per batch)";
}

// Every interface's RDMA device must take its streams' GPU payload slabs, of their real sizes,
// all registered at once (they share the GPU's BAR1 window); the first that cannot is the
// reason. The trial's slabs are released before the run allocates its own.
mem::RegistrationPath probe_registration(const config::RunConfig& cfg, int gpu) {
  capture::verbs::GpuRegistrationTrial trial(gpu);
  mem::RegistrationPath all;
  const auto refs = config::enumerate_streams(cfg);
  for (std::size_t i = 0; i < cfg.capture.interfaces.size(); ++i) {
    const auto& ic = cfg.capture.interfaces[i];
    std::string device = ic.device;
    try {
      if (device.empty()) {
        device = capture::verbs::find_rdma_device(capture::verbs::default_sysfs_root(), ic.name);
      }
    } catch (const std::exception& e) {
      return {false, e.what()};
    }
    std::vector<std::size_t> slabs;
    for (const auto& ref : refs) {
      if (ref.interface != i) continue;
      slabs.push_back(capture::StreamRing::payload_bytes_needed(stream_spec(cfg, ref).ring));
    }
    all = trial.add(device, slabs);
    if (!all.ok) return {false, "RDMA device " + device + ": " + all.detail};
  }
  return all;
}
#endif

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
  facts.nic_scatters = cfg.capture.backend == config::Backend::verbs;
  // GPU payload slots reach the files through the writers' CUDA copy engine (writers/staging).
  facts.writers_stage = writers::staging::cuda_engine_built();
  if (facts.nic_scatters && request != mem::PayloadRequest::host) {
    // capture.gpu, or the GPU nearest the capture NICs in the PCIe tree / NUMA (gpu_choice.hpp).
    std::vector<std::string> nics;
    for (const auto& ic : cfg.capture.interfaces)
      nics.push_back(ic.name);
    facts.gpu = mem::probe_chosen_gpu(nics, cfg.capture.gpu, "/sys");
  }
#ifdef ROCECAP_HAVE_VERBS
  facts.probe_registration = [&cfg](int gpu) { return probe_registration(cfg, gpu); };
#endif
  return mem::choose_payload_memory(request, facts);
}

std::unique_ptr<capture::memory::PayloadMemory> payload_slab(const Runtime& rt,
                                                             const capture::StreamSpec& spec) {
  if (rt.payload.kind != capture::memory::MemoryKind::gpu) return nullptr;  // the ring's HostMemory
  return std::make_unique<mem::GpuMemory>(capture::StreamRing::payload_bytes_needed(spec.ring),
                                          rt.payload.gpu);
}

#ifdef ROCECAP_HAVE_VERBS
void open_verbs(const config::RunConfig& cfg, InterfaceRuntime& ir,
                const config::InterfaceConfig& ic, const std::shared_ptr<spdlog::logger>& log) {
  capture::verbs::VerbsOptions o;
  o.device = ic.device;
  o.interface = ic.name;
  o.cq_size = cfg.capture.cq_size;
  o.event_mode = cfg.capture.poll_mode == config::PollMode::event;
  o.sysfs_root = capture::verbs::default_sysfs_root();
  // Runs on the source's async event thread (never the capture thread).
  auto on_event = [log](const std::string& msg, bool fatal) {
    if (fatal) {
      log->error("{} (the capture stops)", msg);
    } else {
      log->warn("{}", msg);
    }
  };
  ir.verbs = std::make_unique<capture::verbs::VerbsSource>(o, *ir.ingest, on_event);
  log->info("interface {}: RDMA device {}, {} raw packet QPs, {} polling; {}", ic.name,
            ir.verbs->device(), ir.streams.size(), o.event_mode ? "event" : "busy",
            time_source_text(ir.verbs->time_source()));
  if (!ir.verbs->out_of_buffer()) {
    log->warn("interface {}: {} unreadable: NIC drops (out_of_buffer) are not counted", ic.name,
              capture::verbs::out_of_buffer_path(o.sysfs_root, ir.verbs->device(), 1));
  }
  // Joined once the QPs are in RTR with their flows, so the first forwarded frame is received.
  ir.join.emplace(ic.name, group_addresses(ic));
}

// Before anything is built: a missing privilege is a clear message, not an EPERM later.
// The payload memory is not chosen yet: this checks the capability only (memlock follows).
void check_verbs_privileges(const config::RunConfig& cfg) {
  if (const std::string why = daemon::check_privileges("verbs", 0); !why.empty()) {
    throw std::runtime_error(why);
  }
  for (std::size_t i = 0; i < cfg.capture.interfaces.size(); ++i) {
    for (std::size_t j = i + 1; j < cfg.capture.interfaces.size(); ++j) {
      const auto& a = cfg.capture.interfaces[i];
      if (!a.device.empty() && a.device == cfg.capture.interfaces[j].device) {
        throw std::runtime_error("capture.interfaces: " + a.name + " and " +
                                 cfg.capture.interfaces[j].name + " both name RDMA device " +
                                 a.device + "; one interface per device is supported");
      }
    }
  }
}

// Registered host memory stays locked: every header slab, and the payload slabs when they are
// host memory (GPU slabs are device memory, outside RLIMIT_MEMLOCK).
void check_verbs_memlock(const config::RunConfig& cfg, capture::memory::MemoryKind payload) {
  uint64_t streams = 0;
  for (const auto& ic : cfg.capture.interfaces)
    streams += ic.groups.size() * cfg.streams.antennas.size();
  uint64_t per_slot = cfg.capture.header_split + capture::StreamRing::kHeaderAlign;
  if (payload == capture::memory::MemoryKind::host) {
    per_slot = cfg.capture.max_frame + 2 * capture::StreamRing::kHeaderAlign;
  }
  const std::string why =
      daemon::check_privileges("verbs", streams * cfg.capture.ring_depth * per_slot);
  if (!why.empty()) throw std::runtime_error(why);
}
#endif

void open_source(const config::RunConfig& cfg, InterfaceRuntime& ir,
                 const config::InterfaceConfig& ic,
                 [[maybe_unused]] const std::shared_ptr<spdlog::logger>& log) {
  if (cfg.capture.backend == config::Backend::verbs) {
#ifdef ROCECAP_HAVE_VERBS
    return open_verbs(cfg, ir, ic, log);
#endif
  }
  if (cfg.capture.backend == config::Backend::pcap_file) {
    ir.source.emplace(capture::pcap::PcapSource::open_file(
        cfg.capture.pcap_file, cfg.capture.replay_pace == config::ReplayPace::recorded
                                   ? capture::pcap::Pace::recorded
                                   : capture::pcap::Pace::fast));
    return;
  }
  capture::pcap::LiveOptions live;
  live.interface = ic.name;
  for (const auto& g : ic.groups)
    live.groups.push_back({g.address, g.port});
  live.snaplen = static_cast<int>(cfg.capture.max_frame);
  ir.source.emplace(capture::pcap::PcapSource::open_live(live));
  // Joined only once the capture is open, so the first frames the switch forwards are seen.
  ir.join.emplace(ic.name, group_addresses(ic));
}

void add_retention(const config::RunConfig& cfg, capture::StreamPipeline& sp) {
  sp.retention = std::make_unique<capture::Retention>(
      sp.ring(), static_cast<uint32_t>(config::plan_retention(cfg).keep_frames));
}

}  // namespace

std::unique_ptr<Runtime> build_runtime(const config::RunConfig& cfg,
                                       const std::shared_ptr<spdlog::logger>& log,
                                       const FirstSeq& first_seq) {
  if (cfg.capture.backend == config::Backend::verbs) {
#ifdef ROCECAP_HAVE_VERBS
    check_verbs_privileges(cfg);
#else
    throw std::runtime_error(
        "capture.backend verbs: this rocecapd was built without libibverbs "
        "(install libibverbs-dev and rebuild); use backend pcap (any Linux NIC) or pcap-file");
#endif
  }
  if (cfg.capture.backend == config::Backend::pcap) {
    // Ring memory is locked where the limit allows, so only the capability is required.
    if (const std::string why = daemon::check_privileges("pcap", 0); !why.empty()) {
      throw std::runtime_error(why);
    }
  }
  if (cfg.capture.backend == config::Backend::pcap_file && cfg.capture.interfaces.size() != 1) {
    throw std::runtime_error(
        "capture.interfaces: pcap-file replay takes exactly one interface "
        "(the label of the replayed streams)");
  }
  auto rt = std::make_unique<Runtime>();
  rt->config = &cfg;
  rt->payload = choose_payload(cfg);
  log->info("payload memory: {} ({})", capture::memory::to_string(rt->payload.kind),
            rt->payload.reason);
#ifdef ROCECAP_HAVE_VERBS
  if (cfg.capture.backend == config::Backend::verbs) check_verbs_memlock(cfg, rt->payload.kind);
  if (rt->payload.kind == capture::memory::MemoryKind::gpu) capture::verbs::disable_cqe_scatter();
#endif
  rt->run_dir = fs::path(cfg.output.directory) / cfg.run.name;
  rt->run_directory = std::make_unique<RunDirectory>(cfg.output.directory, rt->run_dir);

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
      if (cfg.retention.enabled) add_retention(cfg, *ir->streams.back());
      ptrs.push_back(ir->streams.back().get());
    }
    ir->ingest = std::make_unique<capture::Ingest>(ptrs, record_arrivals);
    log_ring_memory(*ir, log);
    build_writer(*rt, *ir, i, log, first_seq);
    prepare_published(*ir);
    rt->interfaces.push_back(std::move(ir));
  }
  // Sources last: from here on packets are being buffered for us.
  for (std::size_t i = 0; i < cfg.capture.interfaces.size(); ++i) {
    open_source(cfg, *rt->interfaces[i], cfg.capture.interfaces[i], log);
  }
  return rt;
}

}  // namespace rocecap::daemon
