// The run manifest (manifest.json in the run directory; every key in doc/manifest.md): what was
// configured, what arrived, what was lost and why, and every file written. Plain structs filled by
// the daemon from the capture and writer statistics; rendered to JSON and replaced atomically, at
// start, periodically and at stop.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rundir/utc_time.hpp"

namespace rocecap::daemon {

struct ManifestFileEntry {  // one output file as the manifest lists it
  std::string path;         // relative to the output directory (the run directory's parent)
  std::string format;
  uint64_t bytes = 0;
  // Several output targets: the index in Manifest::targets whose directory `path` is relative
  // to, the file's first frame index and its frame (record) count. Absent with one target.
  std::optional<std::size_t> target = std::nullopt;
  uint64_t first_index = 0, frames = 0;
  // Lost files only (lost_files): why the file is gone; target, first_index and frames are
  // then always listed.
  std::string lost = {};
};

// One output target of a run spread over several (output.directories).
struct ManifestTarget {
  std::string directory;
  std::string state;  // active, full, failed
  uint64_t bytes_written = 0, files = 0, free_bytes = 0, out_of_rotation = 0;
  std::string reason;  // why it is (or last was) out of rotation; empty: never
};

struct ManifestFrameTime {
  uint64_t index = 0;   // absolute CODIF frame index
  int64_t unix_ns = 0;  // frame start time
};

// What write errors kept out of one format's files of a stream (loss reason "write_error").
struct ManifestWriteLoss {
  std::string format;                               // raw, codifhdr
  uint64_t frames = 0;                              // received frames missing from the files
  uint64_t fill_frames = 0;                         // fill frames missing from the files
  std::vector<std::pair<uint64_t, uint64_t>> gaps;  // [first frame index, count], fills included
  uint64_t gaps_not_listed = 0;
};

struct ManifestStream {
  std::string interface, group, antenna, source;
  uint16_t port = 0;
  uint64_t packets = 0, bytes = 0, lost = 0, duplicate = 0, late = 0, late_dropped = 0;
  uint64_t invalid = 0, resync = 0, fill_frames = 0, write_errors = 0;
  uint64_t spills = 0;         // several targets: writes moved to another target after a fault
  uint64_t qp_recoveries = 0;  // verbs: the stream's QP taken from ERR back to RTR
  std::optional<ManifestFrameTime> first_frame, last_frame;
  std::vector<std::pair<uint64_t, uint64_t>> gaps;  // [first missing index, count]
  uint64_t gaps_not_listed = 0;                     // gap events beyond the bounded list
  std::vector<ManifestFileEntry> files;
  std::vector<ManifestWriteLoss> write_error_lost;  // one per format written
  // Frames written to files that were then lost with their output target (storage_lost), one
  // per format written, and those files.
  std::vector<ManifestWriteLoss> storage_lost;
  std::vector<ManifestFileEntry> lost_files;
  std::optional<uint16_t> thread;  // VDIF streams split by thread
  // streams.frequencies: the sky frequencies the stream spans, MHz (low, high).
  std::optional<std::pair<double, double>> frequency_mhz;
  // VDIF with VTP, on a flow's first stream: sequence numbers skipped / out of order.
  std::optional<std::pair<uint64_t, uint64_t>> vtp;
};

// The verbs backend's device-level view of an interface.
struct ManifestVerbs {
  std::string device;
  std::string time_source;  // nic-raw-clock or software
  uint64_t wc_errors = 0;   // failed completions other than LOC_LEN_ERR (flushes excluded)
  uint64_t qp_recoveries = 0;
  std::string first_wc_error;  // the first one (oversize included) with its context; empty: none
  uint64_t oversize = 0;       // IBV_WC_LOC_LEN_ERR completions: QP errors of reason oversize
};

// pcap_reader packet_ring: where payloads went (capture/packet/README.md).
struct ManifestZeroCopy {
  uint64_t lent_frames = 0;        // written straight from the kernel's ring block
  uint64_t copied_frames = 0;      // copied into a ring slot: lending bound reached
  uint64_t held_block_stalls = 0;  // times every kernel block was held (kernel drops follow)
};

struct ManifestInterface {
  std::string name;
  uint64_t nic_drops = 0;          // out_of_buffer (verbs) or kernel/libpcap drops (pcap)
  uint64_t ring_full_drops = 0;    // frames that found no free slot in their stream's ring
  uint64_t dump_pinned_drops = 0;  // ... while a triggered dump's pins held slots (doc/dumps.md)
  uint64_t consumer_pinned_drops = 0;  // ... while hold-mode consumers held them (consumers.md)
  uint64_t write_errors = 0;           // failed writes of the per-interface output (pcap)
  uint64_t write_error_lost = 0;       // pcap records not written because of write errors
  uint64_t spills = 0;                 // several targets: pcap writes moved to another target
  uint64_t storage_lost = 0;           // pcap records in files lost with their output target
  std::vector<ManifestFileEntry> lost_files;  // those files
  std::map<std::string, uint64_t> rejected;   // reason -> frames, never written to stream files
  std::vector<ManifestFileEntry> files;       // per-interface output (pcap)
  std::optional<ManifestVerbs> verbs;         // backend verbs only
  // pcap_reader packet_ring with zero_copy only.
  std::optional<ManifestZeroCopy> zero_copy;
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
  uint64_t errors_not_listed = 0;       // write errors beyond the bounded list (still logged)
  std::string failure;                  // why a failed run failed
  std::vector<ManifestTarget> targets;  // only with several output targets
  nlohmann::json triggers;              // trigger log (doc/dumps.md); null: retention is off
  nlohmann::json consumers;  // consumer socket (doc/consumers.md); null: no consumers section
};

nlohmann::json to_json(const Manifest& m);

// ISO 8601 UTC with milliseconds, e.g. 2026-11-21T12:00:00.123Z (shared with rocecap recover).
using rundir::iso8601_utc;

// Writes `m` to `path` atomically; empty string on success, else the error.
std::string write_manifest(const std::string& path, const Manifest& m);
// The same for a manifest already rendered (and merged with earlier attempts, ManifestFile).
std::string write_manifest(const std::string& path, const nlohmann::json& m);

}  // namespace rocecap::daemon
