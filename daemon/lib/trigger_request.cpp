#include "daemon/lib/trigger_request.hpp"

#include <fmt/format.h>

#include <ctime>
#include <nlohmann/json.hpp>

namespace rocecap::daemon {
namespace {

using nlohmann::json;

TriggerError bad(std::string reason, std::string message) {
  return {std::move(reason), std::move(message)};
}

bool digits(std::string_view s, std::size_t at, std::size_t n, int& out) {
  if (at + n > s.size()) return false;
  out = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    out = out * 10 + (s[i] - '0');
  }
  return true;
}

// Reads one time field; error text, or empty.
std::string read_time(const json& j, const char* key, TriggerTime& out) {
  if (!j.contains(key)) return fmt::format("'{}' is missing", key);
  const json& v = j.at(key);
  if (v.is_number_integer()) {
    out.unix_ns = v.get<int64_t>();
    return {};
  }
  if (v.is_string()) {
    const auto ns = parse_utc_ns(v.get<std::string>());
    if (!ns) {
      return fmt::format("'{}': '{}' is not UTC time as YYYY-MM-DDTHH:MM:SS[.fraction]Z", key,
                         v.get<std::string>());
    }
    out.unix_ns = *ns;
    return {};
  }
  if (v.is_object()) {
    for (const char* k : {"epoch", "seconds", "frame"}) {
      if (!v.contains(k) || !v.at(k).is_number_unsigned()) {
        return fmt::format("'{}': CODIF time needs non-negative integers epoch, seconds, frame",
                           key);
      }
    }
    out.codif = true;
    out.epoch = v.at("epoch").get<uint32_t>();
    out.seconds = v.at("seconds").get<uint32_t>();
    out.frame = v.at("frame").get<uint64_t>();
    if (out.epoch > 255) return fmt::format("'{}': epoch {} is above 255", key, out.epoch);
    return {};
  }
  return fmt::format("'{}' must be UTC text, Unix nanoseconds or {{epoch, seconds, frame}}", key);
}

std::string read_names(const json& j, const char* key, std::vector<std::string>& out) {
  if (!j.contains(key)) return {};
  const json& v = j.at(key);
  if (!v.is_array()) return fmt::format("'{}' must be a list of strings", key);
  for (const json& item : v) {
    if (!item.is_string()) return fmt::format("'{}' must be a list of strings", key);
    out.push_back(item.get<std::string>());
  }
  return {};
}

}  // namespace

std::optional<int64_t> parse_utc_ns(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (s.size() < 20 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != ' ') || !digits(s, 11, 2, h) ||
      s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, sec) ||
      s.back() != 'Z') {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  int64_t frac = 0;
  std::size_t at = 19;
  if (s[at] == '.') {
    int scale = 0;
    for (++at; at + 1 < s.size(); ++at, ++scale) {
      if (s[at] < '0' || s[at] > '9' || scale >= 9) return std::nullopt;
      frac = frac * 10 + (s[at] - '0');
    }
    if (scale == 0) return std::nullopt;
    for (; scale < 9; ++scale)
      frac *= 10;
  }
  if (at != s.size() - 1) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  const time_t t = timegm(&tm);
  return int64_t{t} * 1'000'000'000 + frac;
}

std::string format_utc_ns(int64_t ns) {
  const time_t s = static_cast<time_t>(ns >= 0 ? ns / 1'000'000'000 : (ns + 1) / 1'000'000'000 - 1);
  const int64_t frac = ns - int64_t{s} * 1'000'000'000;
  std::tm tm{};
  gmtime_r(&s, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

std::string check_label(std::string_view label) {
  if (label.size() > 64) return "label: at most 64 characters";
  if (label.find('/') != std::string_view::npos) {
    return fmt::format("label '{}' contains '/': it names a directory, not a path", label);
  }
  if (label.find("..") != std::string_view::npos) {
    return fmt::format("label '{}' contains '..': it names a directory, not a path", label);
  }
  if (!label.empty() && label.front() == '.') {
    return fmt::format("label '{}' starts with '.'", label);
  }
  for (char c : label) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return fmt::format("label '{}': only A-Z a-z 0-9 . _ - are allowed", label);
  }
  return {};
}

TriggerParse parse_trigger_request(std::string_view body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    return bad("malformed", fmt::format("malformed JSON: {}", e.what()));
  }
  if (!j.is_object()) return bad("malformed", "the request must be a JSON object");
  static const char* const kKnown[] = {"start", "end", "antennas", "groups", "label", "token"};
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* k : kKnown)
      known = known || key == k;
    if (!known) {
      return bad("malformed", fmt::format("unknown key '{}' (known: start, end, antennas, "
                                          "groups, label, token)",
                                          key));
    }
  }
  TriggerRequest r;
  for (std::string e : {read_time(j, "start", r.start), read_time(j, "end", r.end),
                        read_names(j, "antennas", r.antennas), read_names(j, "groups", r.groups)}) {
    if (!e.empty()) return bad("malformed", e);
  }
  if (j.contains("label")) {
    if (!j.at("label").is_string()) return bad("malformed", "'label' must be a string");
    r.label = j.at("label").get<std::string>();
    if (std::string e = check_label(r.label); !e.empty()) return bad("bad_label", e);
  }
  if (j.contains("token")) {
    if (!j.at("token").is_string()) return bad("malformed", "'token' must be a string");
    r.token = j.at("token").get<std::string>();
  }
  const bool same_kind = r.start.codif == r.end.codif;
  const bool before = !r.start.codif ? r.end.unix_ns <= r.start.unix_ns
                                     : std::tie(r.end.epoch, r.end.seconds, r.end.frame) <=
                                           std::tie(r.start.epoch, r.start.seconds, r.start.frame);
  if (same_kind && before) return bad("bad_window", "end is not after start: the window is empty");
  return r;
}

}  // namespace rocecap::daemon
