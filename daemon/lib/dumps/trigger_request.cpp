#include "daemon/lib/dumps/trigger_request.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "capture/codif/header.hpp"

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

__extension__ using i128 = __int128;

constexpr int64_t kNs = 1'000'000'000;
constexpr const char* kRedacted = "\"(redacted)\"";
// CODIF's (and VDIF's) first epoch, 2000-01-01T00:00:00Z: no frame has an earlier time.
constexpr int64_t kEarliestNs = int64_t{946684800} * kNs;
constexpr i128 kLatestNs = std::numeric_limits<int64_t>::max();  // 2262-04-11T23:47:16.85Z

bool leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int days_in(int y, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && leap(y) ? 29 : kDays[month - 1];
}

// Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's days_from_civil): no
// timegm, whose time_t arithmetic is not checked for years far out.
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// Fraction ".ddd" from s[at] up to the final 'Z', as ns; nullopt when malformed.
std::optional<int64_t> fraction_ns(std::string_view s, std::size_t at) {
  if (at == s.size() - 1) return 0;
  if (s[at] != '.') return std::nullopt;
  int64_t frac = 0;
  int scale = 0;
  for (++at; at + 1 < s.size(); ++at, ++scale) {
    if (s[at] < '0' || s[at] > '9' || scale >= 9) return std::nullopt;
    frac = frac * 10 + (s[at] - '0');
  }
  if (scale == 0) return std::nullopt;
  for (; scale < 9; ++scale)
    frac *= 10;
  return frac;
}

// "2026-11-23T22:40:01.25Z" -> Unix ns, wide enough for any year of four digits; nullopt when
// not that form or not a real date (2000-02-30).
std::optional<i128> parse_utc_wide(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  if (s.size() < 20 || !digits(s, 0, 4, y) || s[4] != '-' || !digits(s, 5, 2, mo) || s[7] != '-' ||
      !digits(s, 8, 2, d) || (s[10] != 'T' && s[10] != ' ') || !digits(s, 11, 2, h) ||
      s[13] != ':' || !digits(s, 14, 2, mi) || s[16] != ':' || !digits(s, 17, 2, sec) ||
      s.back() != 'Z') {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > days_in(y, mo) || h > 23 || mi > 59 || sec > 60)
    return std::nullopt;
  const std::optional<int64_t> frac = fraction_ns(s, 19);
  if (!frac) return std::nullopt;
  const int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
  return i128{secs} * kNs + *frac;
}

TriggerError cannot_represent(const char* key, const std::string& what) {
  return bad("bad_window", fmt::format("'{}': {}: no frame number can name it", key, what));
}

// A time in Unix ns that a frame may have: from CODIF's first epoch to what int64 ns holds.
std::optional<TriggerError> check_range(const char* key, i128 ns, const std::string& shown) {
  if (ns < kEarliestNs) {
    return cannot_represent(key, fmt::format("{} is before 2000-01-01T00:00:00Z, CODIF's first "
                                             "epoch",
                                             shown));
  }
  if (ns > kLatestNs) {
    return cannot_represent(key, fmt::format("{} is after {}, the latest time in Unix "
                                             "nanoseconds",
                                             shown, format_utc_ns(int64_t(kLatestNs))));
  }
  return std::nullopt;
}

std::optional<TriggerError> read_unix_ns(const char* key, const json& v, TriggerTime& out) {
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kLatestNs)) {
    return check_range(key, i128(v.get<uint64_t>()), fmt::format("{} ns", v.get<uint64_t>()));
  }
  out.unix_ns = v.get<int64_t>();
  return check_range(key, out.unix_ns, fmt::format("{} ns", out.unix_ns));
}

std::optional<TriggerError> read_codif_time(const char* key, const json& v, TriggerTime& out) {
  for (const char* k : {"epoch", "seconds", "frame"}) {
    if (!v.contains(k) || !v.at(k).is_number_unsigned()) {
      return bad("malformed", fmt::format("'{}': CODIF time needs non-negative integers epoch, "
                                          "seconds, frame",
                                          key));
    }
  }
  const uint64_t epoch = v.at("epoch").get<uint64_t>(), seconds = v.at("seconds").get<uint64_t>();
  if (epoch > 255) return cannot_represent(key, fmt::format("epoch {} is above 255", epoch));
  if (seconds > UINT32_MAX) {
    return cannot_represent(
        key, fmt::format("seconds {} does not fit CODIF's 32-bit seconds field", seconds));
  }
  out.codif = true;
  out.epoch = static_cast<uint32_t>(epoch);
  out.seconds = static_cast<uint32_t>(seconds);
  out.frame = v.at("frame").get<uint64_t>();
  const i128 ns =
      (i128{capture::codif::epoch_unix_seconds(static_cast<uint8_t>(epoch))} + seconds) * kNs;
  return check_range(key, ns, fmt::format("CODIF epoch {} + {} s", epoch, seconds));
}

// Reads one time field; nullopt when it is good.
std::optional<TriggerError> read_time(const json& j, const char* key, TriggerTime& out) {
  if (!j.contains(key)) return bad("malformed", fmt::format("'{}' is missing", key));
  const json& v = j.at(key);
  if (v.is_number_integer()) return read_unix_ns(key, v, out);
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    const std::optional<i128> ns = parse_utc_wide(text);
    if (!ns) {
      return bad("malformed",
                 fmt::format("'{}': '{}' is not UTC time as YYYY-MM-DDTHH:MM:SS[.fraction]Z (a "
                             "real date)",
                             key, text));
    }
    if (auto e = check_range(key, *ns, text)) return e;
    out.unix_ns = static_cast<int64_t>(*ns);
    return std::nullopt;
  }
  if (v.is_object()) return read_codif_time(key, v, out);
  return bad(
      "malformed",
      fmt::format("'{}' must be UTC text, Unix nanoseconds or {{epoch, seconds, frame}}", key));
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

// Above any dispersion measure seen (the Galactic centre magnetar: ~1800; FRBs: a few thousand),
// and small enough that no delay overflows what the window arithmetic holds.
constexpr double kMaxDm = 100000;

// "dm" and "ref_freq": numbers, dm 0..kMaxDm, ref_freq in MHz above 0 and below 1e6; ref_freq
// only with dm.
std::optional<TriggerError> read_dispersion(const json& j, TriggerRequest& r) {
  if (j.contains("dm")) {
    const json& v = j.at("dm");
    if (!v.is_number() || !(v.get<double>() >= 0) || v.get<double>() > kMaxDm) {
      return bad("malformed", fmt::format("'dm' must be a number from 0 to {} (pc cm^-3), not {}",
                                          kMaxDm, v.dump()));
    }
    r.dm = v.get<double>();
  }
  if (!j.contains("ref_freq")) return std::nullopt;
  const json& v = j.at("ref_freq");
  if (!r.dm) {
    return bad("malformed", "'ref_freq' needs 'dm': it is the frequency the window's times are at");
  }
  if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() >= 1e6) {
    return bad("malformed",
               fmt::format("'ref_freq' must be a frequency in MHz above 0 and below 1e6, not {}",
                           v.dump()));
  }
  r.ref_freq_mhz = v.get<double>();
  return std::nullopt;
}

bool trigger_key(std::string_view key) {
  static constexpr std::string_view kKnown[] = {"start", "end",   "antennas", "groups",
                                                "label", "token", "dm",       "ref_freq"};
  return std::find(std::begin(kKnown), std::end(kKnown), key) != std::end(kKnown);
}

// A key some request has: a trigger's, or a status request's "status".
bool known_key(std::string_view key) {
  return trigger_key(key) || key == "status";
}

// {"status": N[, "token": T]}: N a positive integer, no other key.
TriggerParse read_status_request(const json& j) {
  for (const auto& [key, value] : j.items()) {
    if (key == "status" || key == "token") continue;
    if (trigger_key(key)) {
      return bad("malformed", fmt::format("'{}' with 'status': a status request ({{\"status\": "
                                          "N}}) asks about dump N and takes no other key but "
                                          "'token'; a trigger has no 'status'",
                                          key));
    }
    return bad("malformed", fmt::format("unknown key '{}' in a status request (it has 'status' "
                                        "and, for HTTP, 'token')",
                                        key));
  }
  const json& v = j.at("status");
  if (!v.is_number_unsigned() || v.get<uint64_t>() == 0) {
    return bad("malformed",
               fmt::format("'status' must be a dump's id, a positive integer, not {}", v.dump()));
  }
  StatusRequest r;
  r.id = v.get<uint64_t>();
  if (j.contains("token")) {
    if (!j.at("token").is_string()) return bad("malformed", "'token' must be a string");
    r.token = j.at("token").get<std::string>();
  }
  return r;
}

// One open JSON object while parsing: the keys seen in it, and what it is the value of.
struct OpenObject {
  std::set<std::string> keys;
  std::string last_key;  // the key whose value is being parsed
  std::string within;    // "in 'start'" for a nested object
};

// json::parse that also notices a key given twice in one object (nlohmann would keep the last
// silently): `duplicate` names the first one ("'end'", "'seconds' in 'start'"), else empty.
json parse_unique(std::string_view body, std::string& duplicate) {
  std::vector<OpenObject> open;
  duplicate.clear();
  return json::parse(body, [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) {
      OpenObject o;
      if (!open.empty()) o.within = " in '" + open.back().last_key + "'";
      open.push_back(std::move(o));
    } else if (ev == json::parse_event_t::object_end && !open.empty()) {
      open.pop_back();
    } else if (ev == json::parse_event_t::key && !open.empty()) {
      OpenObject& o = open.back();
      o.last_key = parsed.get<std::string>();
      if (!o.keys.insert(o.last_key).second && duplicate.empty())
        duplicate = "'" + o.last_key + "'" + o.within;
    }
    return true;
  });
}

// A parse error without its "last read: '...'" excerpt of the body: the excerpt may be a
// secret (a token cut short), and the message goes to the manifest's trigger log.
std::string without_last_read(std::string what) {
  const std::size_t at = what.find("; last read: ");
  if (at == std::string::npos) return what;
  const std::size_t next = what.find("; expected", at + 1);
  return what.erase(at, next == std::string::npos ? std::string::npos : next - at);
}

// Text redaction for a body that is not a JSON object: the value after every "token" key is
// replaced (a string up to its closing quote, else up to the next ',' or '}' or the end).
std::string redact_text(std::string text) {
  static constexpr std::string_view kKey = "\"token\"";
  for (std::size_t at = text.find(kKey); at != std::string::npos; at = text.find(kKey, at + 1)) {
    std::size_t v = text.find_first_not_of(" \t\r\n", at + kKey.size());
    if (v == std::string::npos || text[v] != ':') continue;
    v = text.find_first_not_of(" \t\r\n", v + 1);
    if (v == std::string::npos) break;
    std::size_t end = v;
    if (text[v] == '"') {
      for (end = v + 1; end < text.size() && text[end] != '"'; ++end)
        end += text[end] == '\\' ? 1 : 0;
      end = std::min(end + 1, text.size());
    } else {
      end = std::min(text.find_first_of(",}", v), text.size());
    }
    text.replace(v, end - v, kRedacted);
  }
  return text;
}

}  // namespace

std::string redact_request(std::string_view body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return redact_text(std::string(body));
  // An unknown key's value too: a misspelt "token" ("tokne", "auth") holds the same secret.
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "token" || !known_key(it.key())) *it = "(redacted)";
  }
  return j.dump();
}

std::optional<int64_t> parse_utc_ns(std::string_view s) {
  const std::optional<i128> ns = parse_utc_wide(s);
  if (!ns || *ns > kLatestNs || *ns < std::numeric_limits<int64_t>::min()) return std::nullopt;
  return static_cast<int64_t>(*ns);
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
  std::string duplicate;
  try {
    j = parse_unique(body, duplicate);
  } catch (const json::parse_error& e) {
    return bad("malformed", fmt::format("malformed JSON: {}", without_last_read(e.what())));
  }
  if (!duplicate.empty()) {
    return bad("malformed", fmt::format("duplicate key {}: each key may be given once", duplicate));
  }
  if (!j.is_object()) return bad("malformed", "the request must be a JSON object");
  if (j.contains("status")) return read_status_request(j);
  for (const auto& [key, value] : j.items()) {
    if (!trigger_key(key)) {
      return bad("malformed", fmt::format("unknown key '{}' (known: start, end, antennas, "
                                          "groups, label, token, dm, ref_freq; or status alone)",
                                          key));
    }
  }
  TriggerRequest r;
  if (auto e = read_time(j, "start", r.start)) return *e;
  if (auto e = read_time(j, "end", r.end)) return *e;
  for (std::string e : {read_names(j, "antennas", r.antennas), read_names(j, "groups", r.groups)}) {
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
  if (auto e = read_dispersion(j, r)) return *e;
  const bool same_kind = r.start.codif == r.end.codif;
  const bool before = !r.start.codif ? r.end.unix_ns <= r.start.unix_ns
                                     : std::tie(r.end.epoch, r.end.seconds, r.end.frame) <=
                                           std::tie(r.start.epoch, r.start.seconds, r.start.frame);
  if (same_kind && before) return bad("bad_window", "end is not after start: the window is empty");
  return r;
}

}  // namespace rocecap::daemon
