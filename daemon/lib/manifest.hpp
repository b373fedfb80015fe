// The run manifest (manifest.json in the run directory, DESIGN.md): what was configured, what
// arrived, what was lost and why, and every file written. Plain structs filled by the daemon
// from the capture and writer statistics; rendered to JSON and replaced atomically, at start,
// periodically and at stop.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rocecap {

struct ManifestFile {
  std::string path;  // relative to the output directory (the run directory's parent)
  std::string format;
  uint64_t bytes = 0;
};

struct ManifestFrameTime {
  uint64_t index = 0;   // absolute CODIF frame index
  int64_t unix_ns = 0;  // frame start time
};

struct ManifestStream {
  std::string interface, group, antenna, source;
  uint16_t port = 0;
  uint64_t packets = 0, bytes = 0, lost = 0, duplicate = 0, late = 0, late_dropped = 0;
  uint64_t invalid = 0, resync = 0, fill_frames = 0, write_errors = 0;
  uint64_t qp_recoveries = 0;  // verbs: the stream's QP taken from ERR back to RTR
  std::optional<ManifestFrameTime> first_frame, last_frame;
  std::vector<std::pair<uint64_t, uint64_t>> gaps;  // [first missing index, count]
  uint64_t gaps_not_listed = 0;                     // gap events beyond the bounded list
  std::vector<ManifestFile> files;
};

// The verbs backend's device-level view of an interface.
struct ManifestVerbs {
  std::string device;
  std::string time_source;  // nic-wallclock, nic-raw-clock or software
  uint64_t wc_errors = 0;   // failed completions other than LOC_LEN_ERR (flushes excluded)
  uint64_t qp_recoveries = 0;
  std::string first_wc_error;  // the first one with its context; empty: none
};

struct ManifestInterface {
  std::string name;
  uint64_t nic_drops = 0;        // out_of_buffer (verbs) or kernel/libpcap drops (pcap)
  uint64_t ring_full_drops = 0;  // frames that found no free slot in their stream's ring
  uint64_t write_errors = 0;     // failed writes of the per-interface output (pcap)
  std::map<std::string, uint64_t> rejected;  // reason -> frames, never written to stream files
  std::vector<ManifestFile> files;           // per-interface output (pcap)
  std::optional<ManifestVerbs> verbs;        // backend verbs only
};

struct ManifestError {
  std::string path, message;
};

struct Manifest {
  std::string run, state = "starting";  // starting, running, stopped, failed
  std::string started, stopped;         // ISO 8601 UTC; stopped empty while running
  std::string host, version, backend, payload_memory, payload_memory_reason;
  std::string config_file, config_text;
  std::vector<ManifestStream> streams;
  std::vector<ManifestInterface> interfaces;
  std::vector<ManifestError> errors;
  uint64_t errors_not_listed = 0;  // write errors beyond the bounded list (still logged)
  std::string failure;             // why a failed run failed
};

nlohmann::json to_json(const Manifest& m);

// ISO 8601 UTC with milliseconds, e.g. 2026-11-21T12:00:00.123Z.
std::string iso8601_utc(int64_t unix_ns);

// Writes `m` to `path` atomically; empty string on success, else the error.
std::string write_manifest(const std::string& path, const Manifest& m);
// The same for a manifest already rendered (and merged with earlier attempts, ManifestFile).
std::string write_manifest(const std::string& path, const nlohmann::json& m);

}  // namespace rocecap
