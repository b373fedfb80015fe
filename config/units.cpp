#include "config/units.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <ctime>

namespace rocecap::config {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Reads leading decimal digits; false on overflow of uint64_t or when there are none.
bool take_digits(std::string_view& text, uint64_t& value) {
  std::size_t i = 0;
  value = 0;
  while (i < text.size() && is_digit(text[i])) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
    ++i;
  }
  if (i == 0) return false;
  text.remove_prefix(i);
  return true;
}

struct Unit {
  std::string_view name;
  unsigned shift;
};
constexpr std::array<Unit, 6> kBinaryUnits{
    {{"B", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"PiB", 50}}};

// Decimal spellings and the binary unit a user most likely meant.
struct Lookalike {
  std::string_view name;
  std::string_view binary;
};
constexpr std::array<Lookalike, 16> kLookalikes{{{"K", "KiB"},
                                                 {"KB", "KiB"},
                                                 {"k", "KiB"},
                                                 {"kB", "KiB"},
                                                 {"M", "MiB"},
                                                 {"MB", "MiB"},
                                                 {"G", "GiB"},
                                                 {"GB", "GiB"},
                                                 {"T", "TiB"},
                                                 {"TB", "TiB"},
                                                 {"Ki", "KiB"},
                                                 {"Mi", "MiB"},
                                                 {"Gi", "GiB"},
                                                 {"Ti", "TiB"},
                                                 {"P", "PiB"},
                                                 {"PB", "PiB"}}};

std::string trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return std::string(s);
}

std::string size_error(std::string_view text, std::string_view number, std::string_view unit) {
  return fmt::format("'{}' is not a size; use e.g. {}{}", text, number.empty() ? "4" : number,
                     unit);
}

}  // namespace

std::optional<uint64_t> parse_size(std::string_view text, std::string& error) {
  std::string_view rest = text;
  uint64_t value = 0;
  if (!take_digits(rest, value)) {
    error = size_error(text, {}, "GiB");
    return std::nullopt;
  }
  const std::string_view number = text.substr(0, text.size() - rest.size());
  const std::string unit = trim(rest);
  if (unit.empty()) return value;
  for (const Unit& u : kBinaryUnits) {
    if (unit != u.name) continue;
    if (u.shift > 0 && value > (UINT64_MAX >> u.shift)) {
      error = fmt::format("'{}' is too large", text);
      return std::nullopt;
    }
    return value << u.shift;
  }
  for (const Lookalike& l : kLookalikes) {
    if (unit == l.name) {
      error = size_error(text, number, l.binary);
      return std::nullopt;
    }
  }
  error = size_error(text, number, "GiB");
  return std::nullopt;
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text, std::string& error) {
  using std::chrono::nanoseconds;
  struct DUnit {
    std::string_view name;
    int64_t ns;
  };
  // Longer names first so "ms" is not read as "m".
  constexpr std::array<DUnit, 5> units{{{"ms", 1'000'000},
                                        {"d", 86'400'000'000'000},
                                        {"h", 3'600'000'000'000},
                                        {"m", 60'000'000'000},
                                        {"s", 1'000'000'000}}};
  const std::string bad = fmt::format("'{}' is not a duration; use e.g. 30s, 5m or 1h30m", text);
  std::string_view rest = text;
  int64_t total = 0;
  int64_t last_unit = INT64_MAX;
  if (rest.empty()) {
    error = bad;
    return std::nullopt;
  }
  while (!rest.empty()) {
    uint64_t n = 0;
    if (!take_digits(rest, n)) {
      error = bad;
      return std::nullopt;
    }
    const DUnit* found = nullptr;
    for (const DUnit& u : units) {
      if (rest.substr(0, u.name.size()) == u.name) {
        found = &u;
        break;
      }
    }
    if (found == nullptr || found->ns >= last_unit) {
      error = bad;
      return std::nullopt;
    }
    rest.remove_prefix(found->name.size());
    last_unit = found->ns;
    if (n > static_cast<uint64_t>((INT64_MAX - total) / found->ns)) {
      error = fmt::format("'{}' is too long", text);
      return std::nullopt;
    }
    total += static_cast<int64_t>(n) * found->ns;
  }
  return nanoseconds(total);
}

std::optional<uint64_t> parse_uint(std::string_view text, uint64_t max, std::string& error) {
  std::string_view rest = text;
  uint64_t value = 0;
  if (!take_digits(rest, value) || !rest.empty()) {
    error = fmt::format("'{}' is not a whole number", text);
    return std::nullopt;
  }
  if (value > max) {
    error = fmt::format("{} is too large (at most {})", text, max);
    return std::nullopt;
  }
  return value;
}

std::optional<uint32_t> parse_hex32(std::string_view text, std::string& error) {
  const std::string bad = fmt::format("'{}' is not a 32-bit hex word; use e.g. 0xFEEDCAFE", text);
  if (text.size() < 3 || text.size() > 10 || text[0] != '0' || (text[1] != 'x' && text[1] != 'X')) {
    error = bad;
    return std::nullopt;
  }
  uint32_t value = 0;
  for (char c : text.substr(2)) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) {
      error = bad;
      return std::nullopt;
    }
    const int lower = std::tolower(static_cast<unsigned char>(c));
    const uint32_t digit = static_cast<uint32_t>(is_digit(c) ? c - '0' : lower - 'a' + 10);
    value = (value << 4) | digit;
  }
  return value;
}

std::optional<uint32_t> parse_ipv4(std::string_view text, std::string& error) {
  std::string_view rest = text;
  uint32_t address = 0;
  for (int part = 0; part < 4; ++part) {
    if (part > 0) {
      if (rest.empty() || rest.front() != '.') break;
      rest.remove_prefix(1);
    }
    const std::string_view before = rest;
    uint64_t octet = 0;
    if (!take_digits(rest, octet) || octet > 255) break;
    const std::size_t len = before.size() - rest.size();
    if (len > 1 && before.front() == '0') break;
    address = (address << 8) | static_cast<uint32_t>(octet);
    if (part == 3 && rest.empty()) return address;
  }
  error = fmt::format("'{}' is not an IPv4 address", text);
  return std::nullopt;
}

std::optional<Endpoint> parse_endpoint(std::string_view text, std::string& error) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    error = fmt::format("'{}' is not address:port; use e.g. 127.0.0.1:9464", text);
    return std::nullopt;
  }
  std::string why;
  const auto address = parse_ipv4(text.substr(0, colon), why);
  if (!address) {
    error = fmt::format("'{}': {}", text, why);
    return std::nullopt;
  }
  const auto port = parse_uint(text.substr(colon + 1), 65535, why);
  if (!port || *port == 0) {
    error = fmt::format("'{}': port must be 1..65535", text);
    return std::nullopt;
  }
  return Endpoint{*address, static_cast<uint16_t>(*port)};
}

std::string format_ipv4(uint32_t a) {
  return fmt::format("{}.{}.{}.{}", a >> 24, (a >> 16) & 0xFF, (a >> 8) & 0xFF, a & 0xFF);
}

std::string format_size(uint64_t bytes) {
  constexpr std::array<std::string_view, 6> names{"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  std::size_t i = 0;
  while (i + 1 < names.size() && bytes >= (uint64_t{1} << (10 * (i + 1))))
    ++i;
  if (i == 0) return fmt::format("{} B", bytes);
  const uint64_t unit = uint64_t{1} << (10 * i);
  if (bytes % unit == 0) return fmt::format("{} {}", bytes / unit, names[i]);
  return fmt::format("{:.1f} {}", static_cast<double>(bytes) / static_cast<double>(unit), names[i]);
}

std::string format_duration(std::chrono::nanoseconds d) {
  int64_t ms = d.count() / 1'000'000;
  if (ms == 0) return "0s";
  std::string out;
  const std::array<std::pair<int64_t, std::string_view>, 4> parts{
      {{86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1'000, "s"}}};
  for (const auto& [unit_ms, name] : parts) {
    if (ms >= unit_ms) {
      out += fmt::format("{}{}", ms / unit_ms, name);
      ms %= unit_ms;
    }
  }
  if (ms > 0) out += fmt::format("{}ms", ms);
  return out;
}

std::optional<int64_t> parse_utc_second(std::string_view text, std::string& error) {
  // fmt, not "'" + std::string: GCC 12 at -O3 warns (-Wrestrict, a false positive) on the latter.
  error = fmt::format("'{}' is not a UTC time on a whole second, e.g. 2026-11-28T02:00:05Z", text);
  static constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:ddZ";
  if (text.size() != kShape.size()) return std::nullopt;
  for (std::size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = text[i] >= '0' && text[i] <= '9';
    if (kShape[i] == 'd' ? !digit : text[i] != kShape[i]) return std::nullopt;
  }
  auto num = [&](std::size_t at, std::size_t n) {
    int v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v = v * 10 + (text[at + i] - '0');
    return v;
  };
  std::tm tm{};
  tm.tm_year = num(0, 4) - 1900;
  tm.tm_mon = num(5, 2) - 1;
  tm.tm_mday = num(8, 2);
  tm.tm_hour = num(11, 2);
  tm.tm_min = num(14, 2);
  tm.tm_sec = num(17, 2);
  const std::tm asked = tm;
  const time_t t = timegm(&tm);
  // timegm normalises 2026-02-30 into March: a date that moved was not a date.
  if (num(0, 4) < 1970 || tm.tm_mday != asked.tm_mday || tm.tm_mon != asked.tm_mon ||
      tm.tm_hour != asked.tm_hour || tm.tm_min != asked.tm_min || tm.tm_sec != asked.tm_sec)
    return std::nullopt;
  error.clear();
  return int64_t{t} * 1'000'000'000;
}

std::string format_utc_second(int64_t unix_ns) {
  const time_t t = static_cast<time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace rocecap::config
