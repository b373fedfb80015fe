// Text <-> value for the scalar kinds of the run file: sizes with binary units, durations,
// strict unsigned integers, hex words, IPv4 addresses and host:port endpoints.
// Each parser returns the value, or nullopt and a message fit to follow "key.path: ".
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rocecap::config {

// "4096", "512B", "64KiB", "8MiB", "4GiB", "1TiB". Decimal units (KB, MB, GB, K, M, G...) are
// refused with a hint naming the binary unit, since "4GB" is ambiguous on capture hosts.
std::optional<uint64_t> parse_size(std::string_view text, std::string& error);

// "500ms", "10s", "5m", "1h30m", "2d": one or more <integer><unit> terms, units ms s m h d,
// each unit at most once and in decreasing order. A bare number is refused (unit unclear).
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text, std::string& error);

// Decimal digits only (no sign, no exponent, no "0x"); at most max.
std::optional<uint64_t> parse_uint(std::string_view text, uint64_t max, std::string& error);

// "0xFEEDCAFE": 0x followed by 1 to 8 hex digits.
std::optional<uint32_t> parse_hex32(std::string_view text, std::string& error);

// Dotted quad, exactly four decimal parts 0..255, no leading zeros (they read as octal
// elsewhere). Host byte order.
std::optional<uint32_t> parse_ipv4(std::string_view text, std::string& error);

struct Endpoint {
  uint32_t address = 0;
  uint16_t port = 0;
};
// "127.0.0.1:9464"; port 1..65535.
std::optional<Endpoint> parse_endpoint(std::string_view text, std::string& error);

// "2026-11-28T02:00:05Z": a UTC time on a whole second (run.start), as Unix nanoseconds.
// Strict: exactly that shape, a real calendar date, 1970 to 9999.
std::optional<int64_t> parse_utc_second(std::string_view text, std::string& error);
std::string format_utc_second(int64_t unix_ns);  // the same form, the second rounded down

std::string format_ipv4(uint32_t address);
std::string format_size(uint64_t bytes);                  // "4 GiB", "1.5 MiB", "100 B"
std::string format_duration(std::chrono::nanoseconds d);  // "1h30m", "500ms"

}  // namespace rocecap::config
