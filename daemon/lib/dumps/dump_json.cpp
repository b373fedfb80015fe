#include "daemon/lib/dumps/dump_json.hpp"

#include <fmt/format.h>

#include "config/units.hpp"
#include "daemon/lib/dumps/dispersion.hpp"
#include "daemon/lib/dumps/trigger_request.hpp"

namespace rocecap::daemon {

using nlohmann::json;

json range_json(uint64_t first, uint64_t last, const std::string& reason) {
  json j{{"first_frame", first}, {"last_frame", last}, {"frames", last - first + 1}};
  if (!reason.empty()) j["reason"] = reason;
  return j;
}

const char* dump_extension(config::OutputFormat f, bool vdif) {
  switch (f) {
    case config::OutputFormat::raw:
      return vdif ? "vdif" : "codif";
    case config::OutputFormat::codifhdr:
      return "chead";
    case config::OutputFormat::pcap:
      return "pcap";
    case config::OutputFormat::vdifhdr:
      return "vhead";
  }
  return "dat";
}

std::string dump_file_stem(const config::RunConfig& config, const config::StreamRef& ref) {
  const auto& itf = config.capture.interfaces[ref.interface];
  const auto& g = itf.groups[ref.group];
  std::string stem = fmt::format("{}_{}_{}_{}", itf.name, config::format_ipv4(g.address), g.port,
                                 config.streams.antennas[ref.antenna].name);
  if (!config.streams.threads.empty())
    stem += fmt::format("_t{}", config.streams.threads[ref.thread]);
  return stem;
}

writers::DumpFiles dump_file_names(const config::RunConfig& config, const config::StreamRef& ref,
                                   const std::vector<config::OutputFormat>& formats, bool vdif) {
  const std::string stem = dump_file_stem(config, ref);
  writers::DumpFiles files;
  for (config::OutputFormat f : formats) {
    const std::filesystem::path path = stem + "." + dump_extension(f, vdif);
    if (f == config::OutputFormat::raw) files.raw = path;
    if (f == config::OutputFormat::codifhdr) files.codifhdr = path;
    if (f == config::OutputFormat::vdifhdr) files.vdifhdr = path;
    if (f == config::OutputFormat::pcap) files.pcap = path;
  }
  return files;
}

std::string dump_stream_name(const config::RunConfig& config, const config::StreamRef& ref) {
  const auto& g = config.capture.interfaces[ref.interface].groups[ref.group];
  return fmt::format("{}:{} {}", config::format_ipv4(g.address), g.port,
                     config.streams.antennas[ref.antenna].name);
}

json dispersion_json(double dm, double ref_mhz, bool ref_is_top_of_band) {
  return {{"dm", dm},
          {"ref_freq_mhz", ref_mhz},
          {"ref_freq_is_top_of_band", ref_is_top_of_band},
          {"constant_ms", kDispersionMs},
          {"delay", "constant_ms x dm x ((f/GHz)^-2 - (ref_freq/GHz)^-2)"},
          {"stream_window",
           "[start + delay(frequency_mhz.high), end + delay(frequency_mhz.low)), "
           "start rounded down and end up to the ns"}};
}

json stream_outcome_json(const writers::StreamDumpResult& res, json s) {
  s["frames"] = res.frames;
  s["fill_frames"] = res.fill_frames;
  s["bytes"] = res.bytes;
  json gaps = json::array();
  for (const auto& g : res.gaps) {
    gaps.push_back({{"first_frame", g.first_index},
                    {"frames", g.count},
                    {"first_time", format_utc_ns(g.first_time_ns)}});
  }
  s["gaps"] = gaps;
  if (res.not_written) {
    const auto [a, b] = *res.not_written;
    s["not_written"] = range_json(a, b, res.not_written_reason);
  }
  if (!res.write_loss.empty()) {
    json lost = json::object();
    for (const auto& [format, l] : res.write_loss) {
      json g = json::array();
      for (const auto& [first, count] : l.gaps)
        g.push_back({first, count});
      lost[format] = {{"frames", l.frames},
                      {"fill_frames", l.fills},
                      {"gaps", g},
                      {"gaps_not_listed", l.gaps_not_listed}};
    }
    s["write_error_lost"] = lost;
  }
  json files = json::array();
  for (const auto& f : res.files) {
    files.push_back({{"path", f.path.string()}, {"bytes", f.bytes}, {"frames", f.records}});
  }
  s["files"] = files;
  s["errors"] = res.errors;
  return s;
}

}  // namespace rocecap::daemon
