// Everything one run owns, built from the validated config before any thread starts, in the
// order the data flows: per interface its stream pipelines (ring + sequencer), the Ingest that
// fills them, the packet source and multicast membership, and the CaptureWriter that empties
// them. Threads only ever touch what this says they own.
#pragma once

#include <spdlog/logger.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "capture/ingest.hpp"
#include "capture/memory/payload_choice.hpp"
#include "capture/net/multicast_join.hpp"
#include "capture/packet_source.hpp"
#include "common/relaxed_counter.hpp"
#include "config/run_config.hpp"
#include "daemon/lib/reporting/manifest.hpp"
#include "daemon/lib/reporting/published.hpp"
#include "daemon/lib/run/run_directory.hpp"
#include "writers/capture_writer.hpp"

namespace rocecap::daemon {

// Published by a capture thread, read by the main thread.
struct CaptureProgress {
  std::atomic<bool> done{false};        // the capture loop has ended (and flushed)
  std::atomic<bool> failed{false};      // ... because of an error (see error)
  std::atomic<uint64_t> iterations{0};  // loop turns: a stalled loop stops advancing this
  common::RelaxedCounter nic_drops;     // libpcap ps_drop + ps_ifdrop; verbs out_of_buffer
  std::string error;                    // written before failed/done are set

  // pcap_reader packet_ring (capture/packet/packet_ring_source.hpp, ZeroCopyStats).
};

struct InterfaceRuntime {
  std::string name;
  std::optional<unsigned> capture_cpu;
  std::vector<config::StreamRef> refs;  // refs[i] is streams[i]
  std::vector<std::unique_ptr<capture::StreamPipeline>> streams;
  std::unique_ptr<capture::Ingest> ingest;
  // The interface's transport (source_factory.hpp): the capture thread polls it, the other
  // threads read its report.
  std::unique_ptr<capture::PacketSource> source;
  std::optional<capture::net::MulticastJoin> join;
  std::optional<writers::CaptureWriter> writer;
  CaptureProgress progress;
  PublishedStats published;  // for the metrics exposer
};

// Writer-thread error list, copied into the manifest. Bounded: on a full disk every stream
// fails again at each rotation point, for as long as the run lasts.
struct WriteErrors {
  static constexpr std::size_t kMaxListed = 256;
  std::vector<ManifestError> errors;
  uint64_t not_listed = 0;
  std::mutex mutex;  // writer threads append under it; readers run while they are parked
};

// Lists one error (a broken file, a manifest snapshot not written), or counts it beyond
// kMaxListed. Thread-safe.
void list_error(WriteErrors& errors, const std::string& path, const std::string& message);

// On every output target but the first, in the run's directory: which run, which target, and
// where the manifest is (the first target's run directory, with the lock).
inline constexpr const char* kTargetMarker = "rocecap-target.json";

struct Runtime {
  const config::RunConfig* config = nullptr;
  std::filesystem::path run_dir;                // output.directory / run.name
  std::unique_ptr<RunDirectory> run_directory;  // run_dir, held open (containment, loss check)
  StorageLoss storage;                          // set when the storage is gone (exit 5)
  // output.directories (one or more): where each file is placed; shared by every writer.
  std::shared_ptr<writers::OutputTargets> targets;
  // Where the payload slabs live and why (capture.payload_memory): log, manifest, build info.
  capture::memory::PayloadChoice payload{capture::memory::MemoryKind::host, "not decided"};
  std::vector<std::unique_ptr<InterfaceRuntime>> interfaces;
  WriteErrors write_errors;
  // Writer pool: per-thread counters, sized before the threads start (0: one writer thread).
  std::unique_ptr<WriterThreadCounters[]> writer_threads;
  std::size_t writer_thread_count = 0;  // writer thread while running
  std::atomic<uint64_t> packets{0};     // frames seen by every Ingest, for run.packets
  int attempt = 1;                      // > 1: this process continues a run (run_attempt.hpp)
  std::function<nlohmann::json()> trigger_log;  // triggered dumps (doc/dumps.md); empty: none
  // "rocecap_consumers N attached, ..." for the status line (doc/consumers.md); empty: none.
  std::function<std::string()> consumer_status;
  // The consumers' part of the manifest; empty: no consumers section.
  std::function<nlohmann::json()> consumer_log;
  const struct DumpCounters* dump_counters = nullptr;  // their metrics; null: retention off
};

// Builds rings, ingest, writers (no file is opened before the first frame) and opens the
// sources and joins. Throws std::runtime_error naming what failed (interface, file, group).
// A writer's first file gets the sequence number `first_seq` gives for the name of its file 0
// (a restarted run continues after the files of its earlier attempts, never over them); none:
// 0 for every writer.
using FirstSeq = std::function<uint64_t(const std::string& file0)>;
// Output targets left out of rotation for this attempt, keyed by directory (lexically normal,
// no trailing '/'): why (a target an earlier attempt wrote to that could not be read for
// recovery). They are not created, marked nor opened: never re-created empty (issue 23).
using UnavailableTargets = std::map<std::string, std::string>;
std::string target_key(const std::filesystem::path& directory);
// The CODIF sync words streams.sync accepts (the defaults when it lists none).
capture::codif::SyncSet sync_set(const config::StreamsSection& s);
std::unique_ptr<Runtime> build_runtime(const config::RunConfig& config,
                                       const std::shared_ptr<spdlog::logger>& log,
                                       const FirstSeq& first_seq = {},
                                       const UnavailableTargets& unavailable = {});

}  // namespace rocecap::daemon
