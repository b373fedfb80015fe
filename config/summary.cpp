#include "config/summary.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/name_template.hpp"
#include "config/retention_plan.hpp"
#include "config/token_file.hpp"
#include "config/units.hpp"

namespace rocecap::config {
namespace {

std::string run_line(const RunSection& run) {
  std::string stop;
  if (run.duration) stop = "after " + format_duration(*run.duration);
  if (run.packets)
    stop += fmt::format("{}after {} packets", stop.empty() ? "" : " or ", *run.packets);
  if (stop.empty()) stop = "until stopped";
  const std::string start =
      run.start ? ", frames from " + format_utc_second(*run.start) + " on" : std::string();
  return fmt::format("run         {} (stops {}{})\n", run.name, stop, start);
}

std::string capture_lines(const RunConfig& cfg) {
  const CaptureSection& c = cfg.capture;
  std::string out =
      fmt::format("capture     backend {}, {}, payload memory {}\n", to_string(c.backend),
                  to_string(c.poll_mode), to_string(c.payload_memory));
  out += fmt::format("            ring {} slots per stream, header split {} B, max frame {} B",
                     c.ring_depth, c.header_split, c.max_frame);
  if (c.backend == Backend::verbs) out += fmt::format(", CQ {} entries", c.cq_size);
  out += '\n';
  if (c.backend == Backend::pcap_file) {
    out += fmt::format("            replay {} ({})\n", c.pcap_file, to_string(c.replay_pace));
  }
  for (const InterfaceConfig& itf : c.interfaces) {
    std::string where = itf.device.empty() ? "" : itf.device;
    if (itf.capture_cpu)
      where += fmt::format("{}CPU {}", where.empty() ? "" : ", ", *itf.capture_cpu);
    out += fmt::format("  interface {}{}: ", itf.name, where.empty() ? "" : " (" + where + ")");
    for (std::size_t g = 0; g < itf.groups.size(); ++g) {
      out += fmt::format("{}{}:{}", g ? ", " : "", format_ipv4(itf.groups[g].address),
                         itf.groups[g].port);
    }
    out += '\n';
  }
  return out;
}

// streams.frequencies: how many streams know their band, and the band's top (the default
// ref_freq of a trigger with a dm).
std::string frequency_line(const RunConfig& cfg, const std::vector<StreamRef>& streams) {
  const std::optional<double> top = top_of_band_mhz(cfg);
  if (!top) return {};
  std::size_t known = 0;
  double low = *top;
  for (const StreamRef& r : streams) {
    if (const auto band = stream_frequencies(cfg, r)) {
      ++known;
      low = std::min(low, band->low_mhz);
    }
  }
  return fmt::format(
      "frequencies {} of {} streams, {:g}-{:g} MHz (a trigger's dm is referred to {:g} MHz unless "
      "it gives ref_freq){}\n",
      known, streams.size(), low, *top, *top,
      known < streams.size() ? "; the others cannot be dumped with a dm" : "");
}

std::string stream_lines(const RunConfig& cfg) {
  const StreamsSection& s = cfg.streams;
  const auto streams = enumerate_streams(cfg);
  std::string out = fmt::format(
      "streams     {} ({} antennas x groups{}), format {}", streams.size(), s.antennas.size(),
      s.threads.empty() ? "" : fmt::format(" x {} threads", s.threads.size()), to_string(s.format));
  for (std::size_t i = 0; i < s.sync.size(); ++i) {
    out += fmt::format("{}0x{:08X} {}", i ? ", " : ", sync ", s.sync[i].word,
                       to_string(s.sync[i].layout));
  }
  out += '\n';
  for (std::size_t i = 0; i < streams.size() && i < kSummaryStreamLines; ++i) {
    const auto& itf = cfg.capture.interfaces[streams[i].interface];
    const auto& g = itf.groups[streams[i].group];
    const Antenna& a = s.antennas[streams[i].antenna];
    const auto band = stream_frequencies(cfg, streams[i]);
    out += fmt::format("  {:<10} {:>15}:{:<5} {:<10} from {}{}\n", itf.name, format_ipv4(g.address),
                       g.port, a.name, format_ipv4(a.source),
                       band ? fmt::format(", {:g}-{:g} MHz", band->low_mhz, band->high_mhz) : "");
  }
  if (streams.size() > kSummaryStreamLines) {
    out += fmt::format("  ... and {} more\n", streams.size() - kSummaryStreamLines);
  }
  return out + frequency_line(cfg, streams);
}

std::string output_lines(const RunConfig& cfg) {
  const OutputSection& o = cfg.output;
  std::string formats;
  for (OutputFormat f : o.formats)
    formats += fmt::format("{}{}", formats.empty() ? "" : ", ", to_string(f));
  std::string out =
      fmt::format("output      {} [{}], rotate at {}, reorder window {} frames\n", o.directory,
                  formats, format_size(o.rotate_bytes), o.reorder_window);
  if (o.directories.size() > 1) {
    std::string others;
    for (std::size_t i = 1; i < o.directories.size(); ++i)
      others += fmt::format("{}{}", i == 1 ? "" : ", ", o.directories[i]);
    out += fmt::format("            {} targets: files also placed on {}\n", o.directories.size(),
                       others);
  }
  out +=
      fmt::format("            fill gaps {}, strip headers {}, direct I/O {}, writer CPU {}\n",
                  o.fill_gaps ? "yes" : "no", o.strip_headers ? "yes" : "no",
                  o.direct_io ? "yes" : "no", o.writer_cpu ? std::to_string(*o.writer_cpu) : "any");
  const auto streams = enumerate_streams(cfg);
  for (OutputFormat f : o.formats) {
    const std::string first = f == OutputFormat::pcap || streams.empty()
                                  ? pcap_file_name(cfg, 0, 0)
                                  : stream_file_name(cfg, streams.front(), f, 0);
    out += fmt::format("  {:<9} e.g. {}/{}\n", to_string(f), o.directory, first);
  }
  return out;
}

std::string memory_line(const RunConfig& cfg) {
  const uint64_t slots = uint64_t{cfg.capture.ring_depth} * enumerate_streams(cfg).size();
  const uint64_t header = slots * cfg.capture.header_split;
  const uint64_t payload = slots * (cfg.capture.max_frame - cfg.capture.header_split);
  const uint64_t kernel = kernel_ring_bytes(cfg);
  return fmt::format("memory      headers {} (host), payload {} ({}){}\n", format_size(header),
                     format_size(payload), to_string(cfg.capture.payload_memory),
                     kernel == 0 ? std::string() : ", kernel receive rings " + format_size(kernel));
}

// Triggered dumps (doc/dumps.md): what retention costs, per stream, per interface and in total.
std::string retention_lines(const RunConfig& cfg) {
  const RetentionSection& r = cfg.retention;
  if (!r.enabled) return {};
  const RetentionPlan p = plan_retention(cfg);
  std::string formats;
  for (OutputFormat f : r.formats)
    formats += fmt::format("{}{}", formats.empty() ? "" : ", ", to_string(f));
  std::string out = fmt::format(
      "retention   {} at {} frames/s: {} frames + {} pin headroom per stream, rings of {} "
      "slots\n",
      format_duration(r.retain), r.frame_rate, p.keep_frames, p.pin_frames, p.ring_slots);
  out += fmt::format("            memory {} per stream, {} in total (", format_size(p.stream_bytes),
                     format_size(p.total_bytes));
  for (std::size_t i = 0; i < p.interface_bytes.size(); ++i) {
    out += fmt::format("{}{} {}", i ? ", " : "", cfg.capture.interfaces[i].name,
                       format_size(p.interface_bytes[i]));
  }
  out += fmt::format(
      ")\n            dumps [{}] at most {}/s, windows up to {} ahead, trigger "
      "socket {}\n",
      formats, format_size(r.write_rate), format_duration(r.max_future),
      r.socket.empty() ? cfg.output.directory + "/" + cfg.run.name + "/trigger.sock" : r.socket);
  if (trigger_exposed_without_token(cfg)) out += kTriggerExposedNote;
  if (!r.http_token_file.empty()) {
    const std::string warning = read_token_file(r.http_token_file).warning;
    if (!warning.empty())
      out += "            (warning: retention.http_token_file " + warning + ")\n";
  }
  return out;
}

// Consumers (doc/consumers.md): where they attach and what they cost in ring slots.
std::string consumer_lines(const RunConfig& cfg) {
  const ConsumersSection& c = cfg.consumers;
  if (!c.enabled) return {};
  const RetentionPlan p = plan_retention(cfg);
  std::string out = fmt::format(
      "consumers   socket {} (mode 0660{}), streams {}, at most {} attached{}\n", c.socket,
      c.group.empty() ? "" : ", group " + c.group,
      c.streams.empty() ? std::string("all") : fmt::format("{}", fmt::join(c.streams, ", ")),
      c.max_consumers,
      c.wait_for
          ? fmt::format(", capture waits up to {} for {}", format_duration(c.wait_time), c.wait_for)
          : std::string());
  out += fmt::format(
      "            {} frames kept + {} hold frames (at most {}) per stream, log of {} "
      "frames; rings of {} slots, {} more ring memory in total\n",
      cfg.retention.enabled ? p.keep_frames : consumer_keep(cfg), consumer_hold_frames(cfg),
      format_duration(c.hold_time), consumer_log_frames(cfg), p.ring_slots,
      format_size(p.total_bytes));
  return out;
}

}  // namespace

std::string render_summary(const RunConfig& cfg) {
  std::string out = fmt::format("config      {}\n", cfg.source_path);
  out += run_line(cfg.run);
  out += capture_lines(cfg);
  out += stream_lines(cfg);
  out += output_lines(cfg);
  out += memory_line(cfg);
  out += retention_lines(cfg);
  out += consumer_lines(cfg);
  out += cfg.metrics.enabled
             ? fmt::format("metrics     http://{}:{}/metrics{}\n", format_ipv4(cfg.metrics.address),
                           cfg.metrics.port, metrics_exposed(cfg.metrics) ? kExposedNote : "")
             : std::string("metrics     disabled\n");
  out += fmt::format("logging     {}\n", to_string(cfg.logging.level));
  return out;
}

}  // namespace rocecap::config
