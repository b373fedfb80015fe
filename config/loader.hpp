// Loading a run file: YAML -> RunConfig, with every problem found (never only the first).
//
//   auto result = rocecap::config::load_file("/etc/rocecap/atca.yaml");
//   if (!result.ok()) for (auto& p : result.problems) std::cerr << format_problem(p) << '\n';
//
// Checks, in order: YAML syntax; the schema (types, unknown and duplicate keys, required keys,
// enumerations, ranges); cross-field rules (duplicate antennas/groups/streams, backend-specific
// keys, CQ size, file-name collisions); host checks (CPU ids usable by this process, output
// directory writable or creatable, replay file readable). Exceptions never leave the loader.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/problem.hpp"
#include "config/run_config.hpp"

namespace rocecap::config {

struct LoadResult {
  std::optional<RunConfig> config;  // set exactly when problems is empty
  std::vector<Problem> problems;    // in file order (line, then column)
  bool ok() const noexcept { return problems.empty(); }
};

// What the host checks consult; the defaults look at this host and this process.
struct HostChecks {
  // CPU ids a thread may be pinned to; nullopt: this process's affinity mask.
  std::optional<std::vector<unsigned>> usable_cpus;
  // Output directory writable/creatable and replay file readable.
  bool check_filesystem = true;
  // verbs: capture.max_frame against each interface's MTU (<sysfs_root>/class/net/NAME/mtu;
  // an interface without that file is not checked: check-config may run on another host).
  bool check_interfaces = true;
  std::string sysfs_root;  // empty: ROCECAP_SYSFS_ROOT when set, else /sys
  // Ring memory against MemAvailable (<proc_root>/meminfo) and, for backend verbs, against
  // RLIMIT_MEMLOCK and CAP_IPC_LOCK (<proc_root>/self/limits, <proc_root>/self/status).
  // Facts that cannot be read are not checked. Tests point proc_root at fake files.
  bool check_memory = true;
  std::string proc_root = "/proc";
};

// A run file is a regular file of at most this size: anything else (a device, a FIFO, a
// directory, a runaway file) is refused with one problem, before anything is parsed. 16 MiB
// holds 200k antennas in flow style (about 9 MB) with room to spare.
inline constexpr uint64_t kMaxRunFileBytes = uint64_t{16} << 20;

LoadResult load_file(const std::string& path);
LoadResult load_file(const std::string& path, const HostChecks& host);

// Same, from text in memory; file_name is used in problems (and as RunConfig::source_path).
LoadResult load_string(std::string_view text, const std::string& file_name,
                       const HostChecks& host = {});

// A run file recorded on the capture host (a manifest's snapshot, read back by recover, verify
// and inspect): checked for itself, never against this host, whose file systems, interfaces,
// CPUs, memory and memlock limit need not be the capture host's. Without this a verbs run
// whose rings exceed an ordinary user's memlock limit, or a run from a bigger host, would not
// load on the machine that checks its files.
HostChecks snapshot_host();
LoadResult load_snapshot(std::string_view text, const std::string& file_name);

}  // namespace rocecap::config
