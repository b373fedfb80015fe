// What an agent reports about its host's run: live counters scraped from rocecapd's own
// Prometheus endpoint (the numbers Grafana shows), and at the end a summary of the run's
// manifest (doc/fleet.md, "The fleet manifest").
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace rocecap::fleet {

struct LiveCounters {
  uint64_t packets = 0;      // sum of rocecap_stream_received_packets_total
  uint64_t lost_frames = 0;  // sum of rocecap_stream_lost_frames_total
  uint64_t disk_bytes = 0;   // sum of rocecap_target_written_bytes_total
};

// Sums the three families in a Prometheus text exposition.
LiveCounters parse_live_counters(const std::string& exposition);
// GET http://<listen>/metrics (listen: "host:port" from the run file); nullopt when it does
// not answer within 1 s (rocecapd starting, or the run has no metrics section).
std::optional<LiveCounters> scrape_live_counters(const std::string& listen);

// The summary of manifest.json that `rocecap fleet manifest` merges: run, host, state,
// started/stopped, directory, totals (streams, packets, lost, fill_frames, files, bytes) and
// per stream its identity, counts and files (paths made absolute). Throws on unreadable or
// invalid JSON.
nlohmann::json manifest_summary(const std::string& manifest_path, const std::string& output_dir);

}  // namespace rocecap::fleet
