// Shared by the config tests: a valid run file with known line numbers and helpers.
#pragma once

#include <string>
#include <vector>

#include "config/loader.hpp"

namespace rocecap::config::testing {

// Line numbers matter: the bad-config table refers to them.
inline const char* const kBaseConfig =
    "run:\n"                            // 1
    "  name: test-run\n"                // 2
    "  duration: 10s\n"                 // 3
    "capture:\n"                        // 4
    "  backend: verbs\n"                // 5
    "  ring_depth: 1024\n"              // 6
    "  header_split: 128\n"             // 7
    "  interfaces:\n"                   // 8
    "    - name: eth0\n"                // 9
    "      device: mlx5_0\n"            // 10
    "      capture_cpu: 1\n"            // 11
    "      groups:\n"                   // 12
    "        - address: 239.1.0.1\n"    // 13
    "          port: 36001\n"           // 14
    "        - address: 239.1.0.2\n"    // 15
    "          port: 36002\n"           // 16
    "streams:\n"                        // 17
    "  format: codif\n"                 // 18
    "  antennas:\n"                     // 19
    "    - name: a1\n"                  // 20
    "      source: 192.0.2.1\n"         // 21
    "    - name: a2\n"                  // 22
    "      source: 192.0.2.2\n"         // 23
    "output:\n"                         // 24
    "  directory: /tmp/rocecap-test\n"  // 25
    "  formats: [raw, codifhdr]\n"      // 26
    "  rotate: 1GiB\n"                  // 27
    "  reorder_window: 8\n"             // 28
    "  writer_cpu: 2\n"                 // 29
    "metrics:\n"                        // 30
    "  listen: 127.0.0.1:9464\n"        // 31
    "logging:\n"                        // 32
    "  level: info\n";                  // 33

// CPUs 0-7, no file-system, interface or memory checks: the results do not depend on the test host.
inline HostChecks fixed_host() {
  HostChecks host;
  host.usable_cpus = std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6, 7};
  host.check_filesystem = false;
  host.check_interfaces = false;
  host.check_memory = false;
  return host;
}

// kBaseConfig with the one occurrence of `from` replaced by `to` (empty when `from` is not
// found exactly once, so that a typo in a test fails loudly).
inline std::string patched(const std::string& from, const std::string& to) {
  std::string text = kBaseConfig;
  const std::size_t at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) return {};
  return text.replace(at, from.size(), to);
}

}  // namespace rocecap::config::testing
