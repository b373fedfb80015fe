// Pass 3 of the loader: what this host must provide for the run.
#include <fmt/format.h>

#include <algorithm>

#include "config/host_checks.hpp"
#include "config/retention_plan.hpp"
#include "config/schema.hpp"
#include "config/token_file.hpp"
#include "config/units.hpp"
#include "config/verbs_pinning.hpp"

namespace rocecap::config {
namespace {

void check_cpu(Context& ctx, const std::vector<unsigned>& usable, const std::string& path,
               const std::optional<unsigned>& cpu) {
  if (!cpu || std::find(usable.begin(), usable.end(), *cpu) != usable.end()) return;
  ctx.report(path, fmt::format("CPU {} is not usable on this host (this process may run on CPUs "
                               "{})",
                               *cpu, format_cpu_list(usable)));
}

// verbs: a frame longer than the posted slots (capture.max_frame) is a receive-queue error on
// the NIC (IBV_WC_LOC_LEN_ERR; mlx5 moves the queue to the error state), which costs a QP
// recovery and the frames arriving meanwhile: refuse a max_frame that the MTU allows to exceed.
void check_max_frame(Context& ctx, const HostChecks& host, const RunConfig& cfg) {
  if (!host.check_interfaces || cfg.capture.backend != Backend::verbs ||
      ctx.failed("capture.max_frame") || ctx.failed("capture.backend"))
    return;
  const std::string root = host.sysfs_root.empty() ? default_sysfs_root() : host.sysfs_root;
  for (const InterfaceConfig& ic : cfg.capture.interfaces) {
    const std::optional<uint32_t> mtu = interface_mtu(root, ic.name);
    if (!mtu) continue;
    const uint64_t need =
        uint64_t{*mtu} + kEthernetHeaderBytes + uint64_t{kMaxFrameVlanTags} * kVlanTagBytes;
    if (cfg.capture.max_frame >= need) continue;
    ctx.report("capture.max_frame",
               fmt::format("{} B is below the longest frame interface {} can deliver: MTU {} + "
                           "{} (Ethernet header) + {} ({} VLAN tags) = {} B; a longer frame is "
                           "a receive queue error on the NIC (IBV_WC_LOC_LEN_ERR) that stops "
                           "the stream's QP until it is recovered: make max_frame at least {}",
                           cfg.capture.max_frame, ic.name, *mtu, kEthernetHeaderBytes,
                           kMaxFrameVlanTags * kVlanTagBytes, kMaxFrameVlanTags, need, need));
  }
}

// Bytes of host memory per ring slot, as the daemon maps them (capture/stream_ring.cpp: a
// header slot of header_split bytes, a payload slot of the rest, each 64-byte aligned).
constexpr uint64_t kSlotAlign = 64;

// Host memory of every ring: header slots always; payload slots unless they may be GPU
// memory (payload_memory gpu, or auto with verbs, the only backend that can scatter into a
// GPU: the start-up check covers those once the choice is made). Every stream has its own
// ring, each listed VDIF thread included (1024 threads are 1024 times the memory).
uint64_t host_ring_bytes(const RunConfig& cfg, bool& with_payload) {
  const CaptureSection& c = cfg.capture;
  const uint64_t streams = count_streams(cfg);
  with_payload = c.payload_memory == PayloadMemory::host ||
                 (c.payload_memory == PayloadMemory::automatic && c.backend != Backend::verbs);
  const uint64_t per_slot =
      with_payload ? uint64_t{c.max_frame} + 2 * kSlotAlign : uint64_t{c.header_split} + kSlotAlign;
  return streams * c.ring_depth * per_slot;
}

// verbs: what libmlx5 pins for the queues, over every interface (verbs_pinning.hpp): each
// interface's CQ (capture.cq_size, or its receive slots) and its streams' receive queues, as deep
// as their rings (with retention, the retained frames too: check_consistency.cpp check_cq_size).
struct QueuePinning {
  uint64_t bytes = 0;
  uint64_t cq_entries = 0;     // the largest CQ, as libmlx5 rounds it
  uint64_t rq_per_stream = 0;  // one receive queue's buffer
};
QueuePinning verbs_queue_pinning(const Context& ctx, const RunConfig& cfg) {
  const CaptureSection& c = cfg.capture;
  const uint64_t depth = keeps_frames(cfg) && !ctx.failed("retention") && !ctx.failed("consumers")
                             ? plan_retention(cfg).ring_slots
                             : uint64_t{c.ring_depth};
  QueuePinning q;
  q.rq_per_stream = mlx5_rq_buffer_bytes(depth);
  for (const InterfaceConfig& itf : c.interfaces) {
    const uint64_t streams = itf.groups.size() * cfg.streams.antennas.size();
    const uint64_t cq = c.cq_size != 0 ? c.cq_size : streams * depth;
    q.bytes += mlx5_interface_pinned_bytes(cq, streams, depth);
    q.cq_entries = std::max(q.cq_entries, round_up_pow2(cq + 1) - 1);
  }
  return q;
}

void check_memory(Context& ctx, const HostChecks& host, const RunConfig& cfg) {
  for (const char* input : {"capture", "streams.antennas"}) {
    if (ctx.failed(input)) return;
  }
  bool with_payload = false;
  const uint64_t need = host_ring_bytes(cfg, with_payload);
  std::string what = fmt::format("the rings need {} of host memory ({} streams x {} slots, {})",
                                 format_size(need), count_streams(cfg), cfg.capture.ring_depth,
                                 with_payload ? "header and payload" : "header slots only");
  // The packet ring reader's kernel rings are memory too, as large as the rings they lend to.
  const uint64_t kernel = kernel_ring_bytes(cfg);
  if (kernel != 0) {
    what += fmt::format(
        ", plus {} of kernel receive ring (capture.pcap_reader packet_ring, {} "
        "interface(s)): {}",
        format_size(kernel), cfg.capture.interfaces.size(), format_size(need + kernel));
  }
  const MemoryFacts facts = read_memory_facts(host.proc_root);
  if (facts.available_bytes && need + kernel > *facts.available_bytes) {
    ctx.report("capture.ring_depth",
               fmt::format("{} but this host has {} available (MemAvailable, {}/meminfo): the "
                           "run would be killed for lack of memory; lower ring_depth or "
                           "max_frame, or capture fewer streams",
                           what, format_size(*facts.available_bytes), host.proc_root));
  }
  // Memory registration pins the rings (ibv_reg_mr), and the kernel pins libmlx5's queue
  // buffers the same way: beyond RLIMIT_MEMLOCK ibv_reg_mr, ibv_create_cq_ex or ibv_create_qp
  // fails with ENOMEM unless the process has CAP_IPC_LOCK. The pcap backends lock only where
  // allowed.
  if (cfg.capture.backend != Backend::verbs || !facts.memlock_bytes || !facts.ipc_lock ||
      *facts.ipc_lock)
    return;
  const QueuePinning queues = verbs_queue_pinning(ctx, cfg);
  if (need + queues.bytes <= *facts.memlock_bytes) return;
  ctx.report("capture.ring_depth",
             fmt::format("{} locked, plus {} that libmlx5 pins for the completion and receive "
                         "queues (a completion queue of {} entries per interface, {} of receive "
                         "queue per stream, doorbell records): {}, but this process may lock {} "
                         "(RLIMIT_MEMLOCK, {}/self/limits) and lacks CAP_IPC_LOCK; raise the "
                         "limit (systemd: LimitMEMLOCK=infinity) or lower ring_depth",
                         what, format_size(queues.bytes), queues.cq_entries,
                         format_size(queues.rq_per_stream), format_size(need + queues.bytes),
                         format_size(*facts.memlock_bytes), host.proc_root));
}

// Retention (doc/dumps.md) multiplies the rings: its memory per stream, per interface and in
// total, added to the rings' own, must fit in the memory this host has available. With GPU
// payload slabs only the header slots are host memory (the GPU's is checked at start-up).
void check_retention_memory(Context& ctx, const HostChecks& host, const RunConfig& cfg) {
  for (const char* input : {"capture", "streams.antennas", "retention", "output.direct_io"}) {
    if (ctx.failed(input)) return;
  }
  if (!cfg.retention.enabled) return;
  const RetentionPlan p = plan_retention(cfg);
  bool with_payload = false;
  const uint64_t kernel = kernel_ring_bytes(cfg);
  const uint64_t rings = host_ring_bytes(cfg, with_payload) + kernel;
  const uint64_t host_share = with_payload ? p.total_bytes
                                           : p.total_bytes / p.slot_bytes *
                                                 (uint64_t{cfg.capture.header_split} + kSlotAlign);
  std::string per_interface;
  for (std::size_t i = 0; i < p.interface_bytes.size(); ++i) {
    per_interface += fmt::format("{}{} {}", i ? ", " : "", cfg.capture.interfaces[i].name,
                                 format_size(p.interface_bytes[i]));
  }
  const std::string plan = fmt::format(
      "retention keeps {} frames per stream ({} at {} frames/s) plus {} of pin headroom: {} per "
      "stream; per interface {}; {} in total",
      p.keep_frames, format_duration(cfg.retention.retain), cfg.retention.frame_rate, p.pin_frames,
      format_size(p.stream_bytes), per_interface, format_size(p.total_bytes));
  const MemoryFacts facts = read_memory_facts(host.proc_root);
  if (facts.available_bytes && rings + host_share > *facts.available_bytes) {
    ctx.report(
        "retention.retain",
        fmt::format("{}{}; with the rings' {}{} that is {} of host memory, but this "
                    "host has {} available (MemAvailable, {}/meminfo): shorten retain or "
                    "pin_headroom, or capture fewer streams",
                    plan, with_payload ? "" : " (host: header slots only)", format_size(rings),
                    kernel == 0 ? "" : " (their kernel receive rings included)",
                    format_size(rings + host_share), format_size(*facts.available_bytes),
                    host.proc_root));
  }
}

}  // namespace

void check_host(Context& ctx, const HostChecks& host, const RunConfig& cfg) {
  const std::vector<unsigned> usable = host.usable_cpus ? *host.usable_cpus : usable_cpus();
  const auto& interfaces = cfg.capture.interfaces;
  for (std::size_t i = 0; i < interfaces.size(); ++i) {
    check_cpu(ctx, usable, fmt::format("capture.interfaces[{}].capture_cpu", i),
              interfaces[i].capture_cpu);
  }
  check_cpu(ctx, usable, "output.writer_cpu", cfg.output.writer_cpu);
  for (std::size_t i = 0; i < cfg.output.writer_cpus.size(); ++i) {
    check_cpu(ctx, usable, fmt::format("output.writer_cpus[{}]", i), cfg.output.writer_cpus[i]);
  }
  check_max_frame(ctx, host, cfg);
  if (host.check_memory) check_memory(ctx, host, cfg);
  if (host.check_memory) check_retention_memory(ctx, host, cfg);
  if (!host.check_filesystem) return;
  const OutputSection& o = cfg.output;
  if (!ctx.failed("output.directory") && !o.directory.empty() && o.directories.size() <= 1 &&
      !ctx.present("output.directories")) {
    const std::string why = check_writable_directory(o.directory);
    if (!why.empty()) ctx.report("output.directory", why);
  }
  if (ctx.present("output.directories")) check_target_identity(ctx, o, true);
  for (std::size_t i = 0; ctx.present("output.directories") && i < o.directories.size(); ++i) {
    const std::string path = fmt::format("output.directories[{}]", i);
    if (ctx.failed(path)) continue;
    const std::string why = check_writable_directory(o.directories[i]);
    if (!why.empty()) ctx.report(path, why);
  }
  const RetentionSection& r = cfg.retention;
  if (r.enabled && !r.http_token_file.empty() && r.http_token_file.front() == '/' &&
      !ctx.failed("retention.http_token_file")) {
    const TokenFile t = read_token_file(r.http_token_file);
    if (!t.error.empty()) ctx.report("retention.http_token_file", t.error);
  }
  if (cfg.capture.backend == Backend::pcap_file && !ctx.failed("capture.pcap_file") &&
      !ctx.failed("capture.backend") && !cfg.capture.pcap_file.empty()) {
    const std::string why = check_readable_file(cfg.capture.pcap_file);
    if (!why.empty()) ctx.report("capture.pcap_file", why);
  }
}

}  // namespace rocecap::config
