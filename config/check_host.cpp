// Pass 3 of the loader: what this host must provide for the run.
#include <fmt/format.h>

#include <algorithm>

#include "config/host_checks.hpp"
#include "config/schema.hpp"

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

}  // namespace

void check_host(Context& ctx, const HostChecks& host, const RunConfig& cfg) {
  const std::vector<unsigned> usable = host.usable_cpus ? *host.usable_cpus : usable_cpus();
  const auto& interfaces = cfg.capture.interfaces;
  for (std::size_t i = 0; i < interfaces.size(); ++i) {
    check_cpu(ctx, usable, fmt::format("capture.interfaces[{}].capture_cpu", i),
              interfaces[i].capture_cpu);
  }
  check_cpu(ctx, usable, "output.writer_cpu", cfg.output.writer_cpu);
  check_max_frame(ctx, host, cfg);
  if (!host.check_filesystem) return;
  const OutputSection& o = cfg.output;
  if (!ctx.failed("output.directory") && !o.directory.empty()) {
    const std::string why = check_writable_directory(o.directory);
    if (!why.empty()) ctx.report("output.directory", why);
  }
  if (cfg.capture.backend == Backend::pcap_file && !ctx.failed("capture.pcap_file") &&
      !ctx.failed("capture.backend") && !cfg.capture.pcap_file.empty()) {
    const std::string why = check_readable_file(cfg.capture.pcap_file);
    if (!why.empty()) ctx.report("capture.pcap_file", why);
  }
}

}  // namespace rocecap::config
