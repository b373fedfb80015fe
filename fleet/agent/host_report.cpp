#include "fleet/agent/host_report.hpp"

#include <curl/curl.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace rocecap::fleet {
namespace {

using nlohmann::json;

std::size_t append_body(char* data, std::size_t size, std::size_t n, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (s->size() > (64u << 20)) return 0;  // a runaway answer: abort the transfer
  s->append(data, size * n);
  return size * n;
}

// The value at the end of one sample line "name{labels} value [timestamp]".
uint64_t sample_value(const std::string& line) {
  const std::size_t close = line.rfind('}');
  std::istringstream in(line.substr(close == std::string::npos ? line.find(' ') : close + 1));
  double v = 0;
  in >> v;
  return v > 0 ? static_cast<uint64_t>(v) : 0;
}

bool is_family(const std::string& line, const char* name) {
  const std::size_t n = std::char_traits<char>::length(name);
  return line.compare(0, n, name) == 0 && line.size() > n && (line[n] == '{' || line[n] == ' ');
}

std::string absolute(const std::string& path, const std::string& dir) {
  return !path.empty() && path[0] == '/' ? path : dir + "/" + path;
}

json stream_summary(const json& s, const std::string& output_dir, json& totals) {
  json files = json::array();
  for (const json& f : s.value("files", json::array())) {
    files.push_back({{"path", absolute(f.value("path", ""), output_dir)},
                     {"format", f.value("format", "")},
                     {"bytes", f.value("bytes", uint64_t{0})}});
    totals["files"] = totals["files"].get<uint64_t>() + 1;
    totals["bytes"] = totals["bytes"].get<uint64_t>() + f.value("bytes", uint64_t{0});
  }
  for (const char* k : {"packets", "lost", "fill_frames"})
    totals[k] = totals[k].get<uint64_t>() + s.value(k, uint64_t{0});
  totals["streams"] = totals["streams"].get<uint64_t>() + 1;
  json out = {{"interface", s.value("interface", "")},
              {"group", s.value("group", "")},
              {"port", s.value("port", 0)},
              {"antenna", s.value("antenna", "")},
              {"packets", s.value("packets", uint64_t{0})},
              {"lost", s.value("lost", uint64_t{0})},
              {"files", files}};
  if (s.contains("first_frame")) out["first_frame"] = s["first_frame"];
  if (s.contains("last_frame")) out["last_frame"] = s["last_frame"];
  return out;
}

}  // namespace

LiveCounters parse_live_counters(const std::string& exposition) {
  LiveCounters c;
  std::istringstream in(exposition);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (is_family(line, "rocecap_stream_received_packets_total"))
      c.packets += sample_value(line);
    else if (is_family(line, "rocecap_stream_lost_frames_total"))
      c.lost_frames += sample_value(line);
    else if (is_family(line, "rocecap_target_written_bytes_total"))
      c.disk_bytes += sample_value(line);
  }
  return c;
}

std::optional<LiveCounters> scrape_live_counters(const std::string& listen) {
  if (listen.empty()) return std::nullopt;
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return std::nullopt;
  std::string body;
  const std::string url = "http://" + listen + "/metrics";
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 1000L);
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  long status = 0;
  if (curl_easy_perform(curl.get()) != CURLE_OK) return std::nullopt;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) return std::nullopt;
  return parse_live_counters(body);
}

json manifest_summary(const std::string& manifest_path, const std::string& output_dir) {
  std::ifstream in(manifest_path);
  if (!in) throw std::runtime_error("cannot read " + manifest_path);
  const json m = json::parse(in);  // throws with the position on bad JSON
  json totals = {{"streams", 0u},     {"packets", 0u}, {"lost", 0u},
                 {"fill_frames", 0u}, {"files", 0u},   {"bytes", 0u}};
  json streams = json::array();
  for (const json& s : m.value("streams", json::array()))
    streams.push_back(stream_summary(s, output_dir, totals));
  for (const json& i : m.value("interfaces", json::array()))
    for (const json& f : i.value("files", json::array())) {
      totals["files"] = totals["files"].get<uint64_t>() + 1;
      totals["bytes"] = totals["bytes"].get<uint64_t>() + f.value("bytes", uint64_t{0});
    }
  return {{"run", m.value("run", "")},
          {"host", m.value("host", "")},
          {"state", m.value("state", "")},
          {"started", m.value("started", json())},
          {"stopped", m.value("stopped", json())},
          {"failure", m.value("failure", json())},
          {"manifest", manifest_path},
          {"totals", totals},
          {"streams", streams}};
}

}  // namespace rocecap::fleet
