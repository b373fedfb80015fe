#include "writers/fault_injection.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <system_error>

namespace rocecap::writers::fault {
namespace {

struct State {
  Spec spec;
  std::string prefix;  // the directory, normalised, ending in '/'
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> files{0};
  std::atomic<bool> tripped{false};
};

std::atomic<bool> g_installed{false};
State g_state;

bool parse_count(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

// One "after_bytes=N" or "after_files=N" condition.
bool parse_condition(std::string_view c, Spec& spec, std::string& error) {
  const auto eq = c.find('=');
  const std::string_view key = c.substr(0, eq);
  uint64_t n = 0;
  if (eq == std::string_view::npos || !parse_count(c.substr(eq + 1), n)) {
    error = fmt::format("\"{}\": expected after_bytes=N or after_files=N (N a whole number)", c);
    return false;
  }
  if (key == "after_bytes") {
    spec.after_bytes = n;
  } else if (key == "after_files") {
    spec.after_files = n;
  } else {
    error = fmt::format("\"{}\": unknown condition (after_bytes, after_files)", key);
    return false;
  }
  return true;
}

std::string prefix_of(const std::filesystem::path& dir) {
  std::string p = dir.lexically_normal().string();
  if (p.empty() || p.back() != '/') p += '/';
  return p;
}

void trip() noexcept {
  g_state.tripped.store(true, std::memory_order_relaxed);
}

}  // namespace

std::optional<Spec> parse(std::string_view text, std::string& error) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    error = "expected CONDITION[,CONDITION]:DIRECTORY, e.g. after_bytes=8388608:/data/disk2";
    return std::nullopt;
  }
  Spec spec;
  spec.directory = std::filesystem::path(std::string(text.substr(colon + 1))).lexically_normal();
  if (!spec.directory.is_absolute()) {
    error = fmt::format("\"{}\": the directory must be an absolute path",
                        std::string(text.substr(colon + 1)));
    return std::nullopt;
  }
  std::string_view conditions = text.substr(0, colon);
  while (!conditions.empty()) {
    const auto comma = conditions.find(',');
    if (!parse_condition(conditions.substr(0, comma), spec, error)) return std::nullopt;
    conditions =
        comma == std::string_view::npos ? std::string_view{} : conditions.substr(comma + 1);
  }
  if (!spec.after_bytes && !spec.after_files) {
    error = "no condition: give after_bytes=N or after_files=N";
    return std::nullopt;
  }
  return spec;
}

std::string describe(const Spec& spec) {
  std::string when;
  if (spec.after_bytes) when = fmt::format("once {} bytes were written there", *spec.after_bytes);
  if (spec.after_files) {
    if (!when.empty()) when += " or ";
    when += fmt::format("once {} files were opened there", *spec.after_files);
  }
  return fmt::format("every open and write under {} fails with EIO {}", spec.directory.string(),
                     when);
}

void install(const Spec& spec) {
  g_state.spec = spec;
  g_state.prefix = prefix_of(spec.directory);
  g_state.bytes.store(0, std::memory_order_relaxed);
  g_state.files.store(0, std::memory_order_relaxed);
  g_state.tripped.store(false, std::memory_order_relaxed);
  g_installed.store(true, std::memory_order_release);
}

void clear() noexcept {
  g_installed.store(false, std::memory_order_release);
}

bool covers(const std::filesystem::path& path) {
  if (!g_installed.load(std::memory_order_acquire)) return false;
  return path.lexically_normal().string().compare(0, g_state.prefix.size(), g_state.prefix) == 0;
}

bool fail_open() noexcept {
  if (g_state.tripped.load(std::memory_order_relaxed)) return true;
  const uint64_t n = g_state.files.fetch_add(1, std::memory_order_relaxed) + 1;
  if (g_state.spec.after_files && n > *g_state.spec.after_files) {
    trip();
    return true;
  }
  return false;
}

bool fail_write(uint64_t n) noexcept {
  if (g_state.tripped.load(std::memory_order_relaxed)) return true;
  if (!g_state.spec.after_bytes) return false;
  const uint64_t before = g_state.bytes.fetch_add(n, std::memory_order_relaxed);
  if (before + n > *g_state.spec.after_bytes) {
    trip();
    return true;
  }
  return false;
}

Status error(std::string_view op, const std::filesystem::path& path) {
  return Status::error(EIO,
                       fmt::format("{} {}: {} (injected: {})", op, path.string(),
                                   std::generic_category().message(EIO), kEnvironment),
                       path);
}

}  // namespace rocecap::writers::fault
