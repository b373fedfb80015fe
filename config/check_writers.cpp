// Part of pass 2: the writer pool's keys (output.writer_threads, writer_cpus, writer_cpu)
// against what the run can use. The pool gives each thread whole rings (a ring has one
// consumer) and an interface with pcap output or GPU payload staging to one thread
// (daemon/lib/run/writer_pool.cpp): threads beyond that ran idle, or were silently not started.
#include <fmt/format.h>

#include "config/schema.hpp"

namespace rocecap::config {
namespace {

// The most writer threads the run can keep busy, and why it is that many.
struct WriterLimit {
  uint64_t threads = 0;
  std::string why;
};

WriterLimit writer_limit(const RunConfig& cfg) {
  const uint64_t interfaces = cfg.capture.interfaces.size();
  const char* whole = has_format(cfg.output, OutputFormat::pcap)         ? "pcap output"
                      : cfg.capture.payload_memory == PayloadMemory::gpu ? "GPU payload staging"
                                                                         : nullptr;
  if (whole != nullptr) {
    return {interfaces, fmt::format("{} interface{} with {}, written whole by one thread",
                                    interfaces, interfaces == 1 ? "" : "s", whole)};
  }
  const uint64_t streams = count_streams(cfg);
  return {streams, fmt::format("{} stream{} to share out (a ring has one writer)", streams,
                               streams == 1 ? "" : "s")};
}

// "CPU 4" or "CPUs 4, 5": the listed CPUs from index `from` on.
std::string cpus_from(const std::vector<unsigned>& cpus, std::size_t from) {
  std::string list;
  for (std::size_t i = from; i < cpus.size(); ++i)
    list += fmt::format("{}{}", i == from ? "" : ", ", cpus[i]);
  return fmt::format("CPU{} {}", cpus.size() - from == 1 ? "" : "s", list);
}

// writer_cpus without writer_threads (or with 0, "chosen"): one thread per listed CPU, so no
// listed CPU is left without a writer. Listing more CPUs than threads is refused.
bool resolve_thread_count(Context& ctx, OutputSection& o) {
  if (o.writer_cpus.empty()) return true;
  if (o.writer_threads == 0) {
    o.writer_threads = static_cast<uint32_t>(o.writer_cpus.size());
    return true;
  }
  if (o.writer_cpus.size() <= o.writer_threads) return true;
  ctx.report("output.writer_cpus",
             fmt::format("{} CPUs for {} writer thread{} (output.writer_threads): {} would run "
                         "no writer; list at most {}",
                         o.writer_cpus.size(), o.writer_threads, o.writer_threads == 1 ? "" : "s",
                         cpus_from(o.writer_cpus, o.writer_threads), o.writer_threads));
  return false;
}

}  // namespace

void check_writer_plan(Context& ctx, RunConfig& cfg) {
  OutputSection& o = cfg.output;
  if (ctx.present("output.writer_cpu") && ctx.present("output.writer_cpus")) {
    ctx.report("output.writer_cpus",
               "give output.writer_cpu (one writer CPU) or output.writer_cpus (one per writer "
               "thread), not both");
    return;
  }
  if (ctx.failed("output.writer_threads") || ctx.failed("output.writer_cpus")) return;
  const bool from_cpus = o.writer_threads == 0;
  if (!resolve_thread_count(ctx, o) || o.writer_threads == 0) return;
  for (const char* input : {"capture", "streams", "output.formats"}) {
    if (ctx.failed(input)) return;
  }
  const WriterLimit limit = writer_limit(cfg);
  if (o.writer_threads <= limit.threads) return;
  const char* key = from_cpus ? "output.writer_cpus" : "output.writer_threads";
  ctx.report(key, fmt::format("{} writer thread{}{}, but this run has {}; at most {}",
                              o.writer_threads, o.writer_threads == 1 ? "" : "s",
                              from_cpus ? " (one per listed CPU)" : "", limit.why, limit.threads));
}

}  // namespace rocecap::config
