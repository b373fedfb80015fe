// The report's two forms: JSON for scripts and tests, a table for people.
#include <cstdio>
#include <ctime>

#include "tools/lib/inspect.hpp"

namespace rocecap::tools {
namespace {

std::string iso_time(int64_t unix_ns) {
  const time_t secs = static_cast<time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof frac, ".%09lldZ", static_cast<long long>(unix_ns % 1'000'000'000));
  return std::string(buf) + frac;
}

std::string stream_name(const InspectReport& r, const InspectStream& s) {
  if (!s.group.empty() && r.payload == "vdif") {  // one flow may carry several VDIF threads
    return s.group + ":" + std::to_string(s.port) + " <- " + s.source + " thread " +
           std::to_string(s.thread_id);
  }
  if (!s.group.empty()) return s.group + ":" + std::to_string(s.port) + " <- " + s.source;
  return std::string("station ") + capture::codif::station_name(s.station_id).data() + " group " +
         std::to_string(s.group_id) + " thread " + std::to_string(s.thread_id);
}

uint64_t total(const std::map<std::string, uint64_t>& m) {
  uint64_t n = 0;
  for (const auto& [k, v] : m)
    n += v;
  return n;
}

}  // namespace

nlohmann::json header_json(const capture::codif::Header& h, const capture::codif::Timing& t) {
  char sync[16];
  std::snprintf(sync, sizeof sync, "0x%08X", h.sync);
  return {{"layout", h.layout == capture::codif::Layout::v3 ? "v3" : "v1"},
          {"sync", sync},
          {"frame", h.frame},
          {"seconds", h.seconds},
          {"epoch", h.epoch},
          {"nbits", h.nbits},
          {"complex", h.complex},
          {"invalid", h.invalid},
          {"atypical", h.atypical},
          {"cal", h.cal},
          {"representation", h.representation},
          {"version", h.version},
          {"protocol", h.protocol},
          {"period", h.period},
          {"thread_id", h.thread_id},
          {"group_id", h.group_id},
          {"secondary_id", h.secondary_id},
          {"station", capture::codif::station_name(h.station_id).data()},
          {"nchan", h.nchan},
          {"block_length", h.block_length},
          {"payload_bytes", h.payload_bytes()},
          {"total_samples", h.total_samples},
          {"samples_per_frame", t.samples_per_frame},
          {"frames_per_period", t.frames_per_period}};
}

nlohmann::json to_json(const InspectReport& r) {
  nlohmann::json streams = nlohmann::json::array();
  for (const auto& s : r.streams) {
    nlohmann::json j;
    if (!s.group.empty()) {
      j["group"] = s.group;
      j["port"] = s.port;
      j["source"] = s.source;
    }
    j["station"] = capture::codif::station_name(s.station_id).data();
    j["group_id"] = s.group_id;
    j["thread_id"] = s.thread_id;
    j["records"] = s.records;
    j["frames"] = s.frames;
    j["unique_frames"] = s.unique_frames;
    j["duplicates"] = s.duplicates;
    j["late"] = s.late;
    j["invalid"] = s.invalid;
    j["rejected"] = s.rejected;
    if (s.first_header) {
      j["first_index"] = s.first_index;
      j["last_index"] = s.last_index;
      j["first_time"] = iso_time(s.first_time_ns);
      j["last_time"] = iso_time(s.last_time_ns);
      j["first_time_ns"] = s.first_time_ns;
      j["last_time_ns"] = s.last_time_ns;
      j["first_header"] = header_json(*s.first_header, s.timing);
    }
    j["missing"] = s.missing;
    j["gaps"] = nlohmann::json::array();
    for (const auto& [first, count] : s.gaps)
      j["gaps"].push_back({first, count});
    streams.push_back(std::move(j));
  }
  nlohmann::json out{{"file", r.file},
                     {"format", r.format},
                     {"records", r.records},
                     {"rejected", r.rejected},
                     {"streams", streams}};
  if (!r.precision.empty()) out["timestamp_precision"] = r.precision;
  if (!r.payload.empty()) out["payload"] = r.payload;
  return out;
}

void print_table(const InspectReport& r, std::ostream& out) {
  out << r.file << ": " << r.format << (r.precision.empty() ? "" : " (" + r.precision + ")")
      << (r.payload == "vdif" ? " of VDIF frames" : "") << ", " << r.records << " records, "
      << r.streams.size() << " streams";
  if (!r.rejected.empty()) {
    out << ", not CODIF/UDP:";
    for (const auto& [k, v] : r.rejected)
      out << " " << k << "=" << v;
  }
  out << "\n\n";
  for (const auto& s : r.streams) {
    out << stream_name(r, s) << "\n";
    out << "  frames " << s.frames << " (unique " << s.unique_frames << "), duplicates "
        << s.duplicates << ", late " << s.late << ", invalid " << s.invalid << ", missing "
        << s.missing << " in " << s.gaps.size() << " gaps, rejected " << total(s.rejected) << "\n";
    if (s.first_header) {
      out << "  first " << s.first_index << " " << iso_time(s.first_time_ns) << "\n"
          << "  last  " << s.last_index << " " << iso_time(s.last_time_ns) << "\n";
    }
    if (!s.gaps.empty()) {
      out << "  gaps [first, count]:";
      std::size_t shown = 0;
      for (const auto& [first, count] : s.gaps) {
        if (shown++ == 10) {
          out << " ... (" << s.gaps.size() - 10 << " more)";
          break;
        }
        out << " [" << first << ", " << count << "]";
      }
      out << "\n";
    }
    for (const auto& [k, v] : s.rejected)
      out << "  rejected " << k << ": " << v << "\n";
    if (s.first_header) {
      out << "  first header:";
      const nlohmann::json fields = header_json(*s.first_header, s.timing);
      for (const auto& [k, v] : fields.items()) {
        out << " " << k << "=" << (v.is_string() ? v.get<std::string>() : v.dump());
      }
      out << "\n";
    }
    out << "\n";
  }
}

}  // namespace rocecap::tools
