#include "daemon/lib/run/source_factory.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "capture/packet/packet_ring_source.hpp"
#include "capture/pcap/pcap_source.hpp"
#include "config/packet_ring_geometry.hpp"
#include "daemon/lib/run/privileges.hpp"
#include "daemon/lib/run/run_assembly.hpp"
#ifdef ROCECAP_HAVE_VERBS
#include "capture/verbs/device_finder.hpp"
#include "capture/verbs/payload_registration.hpp"
#include "capture/verbs/verbs_source.hpp"
#include "config/retention_plan.hpp"
#include "config/verbs_pinning.hpp"
#endif

namespace rocecap::daemon {
namespace {

namespace mem = capture::memory;

std::vector<uint32_t> group_addresses(const config::InterfaceConfig& ic) {
  std::vector<uint32_t> groups;
  for (const auto& g : ic.groups)
    groups.push_back(g.address);
  return groups;
}

// capture.pcap_reader packet_ring: rocecapd reads the kernel's TPACKET_V3 ring itself, and with
// zero_copy the payload slots of host-memory rings point into its blocks (capture/packet/).
// Lending rings get a kernel ring that holds as many frames as they do, the size --check-config
// counted (config::interface_kernel_ring_bytes): a stalled writer holds kernel blocks, not
// only slots.
std::unique_ptr<capture::PacketSource> open_packet_ring(const config::RunConfig& cfg,
                                                        std::size_t index,
                                                        const capture::pcap::LiveOptions& live,
                                                        InterfaceRuntime& ir, spdlog::logger* log) {
  capture::packet::RingOptions ro;
  ro.interface = live.interface;
  ro.groups = live.groups;
  ro.block_bytes = static_cast<uint32_t>(config::kPacketBlockBytes);
  ro.snaplen = live.snaplen;
  ro.timeout_ms = live.timeout_ms;
  ro.zero_copy = cfg.capture.zero_copy;
  uint64_t lending = 0;
  if (ro.zero_copy) {
    for (const auto& sp : ir.streams) {
      if (sp->ring().payload_kind() != capture::memory::MemoryKind::host) continue;
      sp->ring().enable_loans();
      ++lending;
    }
  }
  ro.buffer_bytes = static_cast<std::size_t>(config::interface_kernel_ring_bytes(cfg, index));
  auto src = capture::packet::PacketRingSource::open(ro);
  if (log != nullptr) {
    log->info("{}: kernel receive ring of {} MiB ({} MiB blocks){}", ro.interface,
              src->ring_bytes() >> 20, config::kPacketBlockBytes >> 20,
              lending == 0 ? std::string()
                           : fmt::format(", for {} zero-copy rings x {} slots of up to {} B",
                                         lending, cfg.capture.ring_depth, live.snaplen));
  }
  src->attach(*ir.ingest);
  return src;
}

std::unique_ptr<capture::PacketSource> open_pcap(const config::RunConfig& cfg, std::size_t index,
                                                 InterfaceRuntime& ir, spdlog::logger* log) {
  const config::InterfaceConfig& ic = cfg.capture.interfaces[index];
  capture::Ingest& ingest = *ir.ingest;
  using capture::pcap::PcapSource;
  std::unique_ptr<PcapSource> src;
  if (cfg.capture.backend == config::Backend::pcap_file) {
    src = std::make_unique<PcapSource>(PcapSource::open_file(
        cfg.capture.pcap_file, cfg.capture.replay_pace == config::ReplayPace::recorded
                                   ? capture::pcap::Pace::recorded
                                   : capture::pcap::Pace::fast));
  } else {
    capture::pcap::LiveOptions live;
    live.interface = ic.name;
    for (const auto& g : ic.groups)
      live.groups.push_back({g.address, g.port});
    live.snaplen = static_cast<int>(cfg.capture.max_frame);
    if (cfg.capture.pcap_reader == config::PcapReader::packet_ring)
      return open_packet_ring(cfg, index, live, ir, log);
    src = std::make_unique<PcapSource>(PcapSource::open_live(live));
  }
  src->attach(ingest);
  return src;
}

#ifdef ROCECAP_HAVE_VERBS
const char* time_source_text(capture::verbs::TimeSource t) {
  switch (t) {
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
mem::RegistrationPath probe_registration(const config::RunConfig& cfg, const SlabBytes& slab_bytes,
                                         int gpu) {
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
      if (ref.interface == i) slabs.push_back(slab_bytes(ref));
    }
    all = trial.add(device, slabs);
    if (!all.ok) {
      // The verbs errors name the device already; a failed GPU allocation does not.
      const std::string named = "RDMA device " + device;
      if (all.detail.rfind(named, 0) == 0) return all;
      return {false, named + ": " + all.detail};
    }
  }
  return all;
}

std::unique_ptr<capture::PacketSource> open_verbs(const config::RunConfig& cfg,
                                                  const config::InterfaceConfig& ic,
                                                  InterfaceRuntime& ir,
                                                  const std::shared_ptr<spdlog::logger>& log) {
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
  auto src = std::make_unique<capture::verbs::VerbsSource>(o, *ir.ingest, on_event);
  log->info("interface {}: RDMA device {}, {} raw packet QPs, {} polling; {}", ic.name,
            src->device(), ir.streams.size(), o.event_mode ? "event" : "busy",
            time_source_text(src->time_source()));
  if (!src->out_of_buffer()) {
    log->warn("interface {}: {} unreadable: NIC drops (out_of_buffer) are not counted", ic.name,
              capture::verbs::out_of_buffer_path(o.sysfs_root, src->device(), 1));
  }
  return src;
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
// host memory (GPU slabs are device memory, outside RLIMIT_MEMLOCK); so do libmlx5's CQ and
// receive queue buffers, which the kernel pins too (config/verbs_pinning.hpp).
void check_verbs_memlock(const config::RunConfig& cfg, mem::MemoryKind payload) {
  const uint64_t depth = config::keeps_frames(cfg) ? config::plan_retention(cfg).ring_slots
                                                   : uint64_t{cfg.capture.ring_depth};
  uint64_t streams = 0;
  uint64_t queues = 0;
  for (const auto& ic : cfg.capture.interfaces) {
    const uint64_t n = ic.groups.size() * cfg.streams.antennas.size();
    streams += n;
    queues += config::mlx5_interface_pinned_bytes(
        cfg.capture.cq_size != 0 ? cfg.capture.cq_size : n * depth, n, depth);
  }
  uint64_t per_slot = cfg.capture.header_split + capture::StreamRing::kHeaderAlign;
  if (payload == mem::MemoryKind::host) {
    per_slot = cfg.capture.max_frame + 2 * capture::StreamRing::kHeaderAlign;
  }
  const std::string why =
      daemon::check_privileges("verbs", streams * cfg.capture.ring_depth * per_slot + queues);
  if (!why.empty()) throw std::runtime_error(why);
}
#endif

}  // namespace

void check_backend(const config::RunConfig& cfg) {
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
}

void backend_payload_facts(const config::RunConfig& cfg,
                           [[maybe_unused]] const SlabBytes& slab_bytes, mem::PayloadFacts& facts) {
  facts.nic_scatters = cfg.capture.backend == config::Backend::verbs;
#ifdef ROCECAP_HAVE_VERBS
  facts.probe_registration = [&cfg, slab_bytes](int gpu) {
    return probe_registration(cfg, slab_bytes, gpu);
  };
#endif
}

void prepare_backend([[maybe_unused]] const config::RunConfig& cfg,
                     [[maybe_unused]] mem::MemoryKind payload) {
#ifdef ROCECAP_HAVE_VERBS
  if (cfg.capture.backend == config::Backend::verbs) check_verbs_memlock(cfg, payload);
  if (payload == mem::MemoryKind::gpu) capture::verbs::disable_cqe_scatter();
#endif
}

void open_source(const config::RunConfig& cfg, std::size_t index, InterfaceRuntime& ir,
                 const std::shared_ptr<spdlog::logger>& log) {
  const config::InterfaceConfig& ic = cfg.capture.interfaces[index];
  switch (cfg.capture.backend) {
    case config::Backend::pcap_file:
      ir.source = open_pcap(cfg, index, ir, log.get());
      return;  // a replay joins nothing
    case config::Backend::pcap:
      ir.source = open_pcap(cfg, index, ir, log.get());
      break;
    case config::Backend::verbs:
#ifdef ROCECAP_HAVE_VERBS
      ir.source = open_verbs(cfg, ic, ir, log);
      break;
#else
      throw std::runtime_error("capture.backend verbs: not built in");  // check_backend said so
#endif
  }
  // Joined only once the capture is open (verbs: the QPs in RTR with their flows), so the
  // first frames the switch forwards are received.
  ir.join.emplace(ic.name, group_addresses(ic));
}

}  // namespace rocecap::daemon
