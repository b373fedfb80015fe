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

}  // namespace

void check_host(Context& ctx, const HostChecks& host, const RunConfig& cfg) {
  const std::vector<unsigned> usable = host.usable_cpus ? *host.usable_cpus : usable_cpus();
  const auto& interfaces = cfg.capture.interfaces;
  for (std::size_t i = 0; i < interfaces.size(); ++i) {
    check_cpu(ctx, usable, fmt::format("capture.interfaces[{}].capture_cpu", i),
              interfaces[i].capture_cpu);
  }
  check_cpu(ctx, usable, "output.writer_cpu", cfg.output.writer_cpu);
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
