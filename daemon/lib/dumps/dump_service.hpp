// Triggered dumps (doc/dumps.md): turns a trigger request into a plan per stream, pins the
// retained frames of the window at once, answers what will be written, and writes the dumps on
// its own thread, one request after another (requests that overlap one in progress are queued:
// each keeps its pins, so none of its frames can be recycled while it waits), at
// retention.write_rate bytes per second so that continuous recording keeps its share of the
// disk.
//
// Each dump: <run dir>/dumps/<id>-<label>/ with per stream one file per retention.formats
// format (raw: <group>_<port>_<antenna>.codif, time-aligned, fill frames for lost frames) and
// dump.json (the request, per stream the window, what was written, what was not and why).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "capture/codif/header.hpp"
#include "capture/retention.hpp"
#include "capture/stream_pipeline.hpp"
#include "config/run_config.hpp"
#include "daemon/lib/dumps/dispersion.hpp"
#include "daemon/lib/dumps/trigger_request.hpp"
#include "writers/dump_writer.hpp"
#include "writers/output_targets.hpp"

namespace rocecap::daemon {

// One stream a dump can serve.
struct DumpStream {
  config::StreamRef ref;
  capture::Retention* retention = nullptr;
  capture::codif::SyncSet syncs = capture::codif::SyncSet::defaults();
  // VDIF streams: their frame rate and VTP (the stream's spec); CODIF: ignored.
  capture::StreamFormat format = capture::StreamFormat::codif;
  capture::VdifSpec vdif;
};

// Counters for the metrics (any thread).
struct DumpCounters {
  std::atomic<uint64_t> received{0}, served{0}, bytes{0}, frames_not_retained{0}, fill_frames{0};
  std::atomic<uint64_t> failed{0};       // accepted dumps that could not be written whole
  std::atomic<uint64_t> duration_ns{0};  // summed over served dumps
  std::atomic<uint64_t> queued{0};       // accepted, not yet written
  static constexpr const char* kReasons[] = {
      "malformed",    "bad_window", "bad_label",   "unknown_antenna", "unknown_group", "too_long",
      "unauthorized", "busy",       "not_running", "too_far_ahead",   "no_frequencies"};
  static constexpr std::size_t kReasonCount = std::size(kReasons);
  std::atomic<uint64_t> refused[kReasonCount]{};
};

enum class DumpLogLevel { info, warn, error };

struct DumpServiceOptions {
  // Frames not received by the window's end plus this are reported as not received.
  std::chrono::nanoseconds future_grace = std::chrono::seconds(2);
  std::function<int64_t()> now_ns;  // wall clock, Unix ns; tests substitute theirs
  std::size_t max_queued = 16;
  int cuda_device = -1;  // GPU of the payload slabs (copies out of GPU memory)
  // The run's output targets (output.directories), shared with the writers; null: made from
  // the run file's output.directory/directories.
  std::shared_ptr<writers::OutputTargets> targets;
  // A line for the daemon's log (each dump's outcome; a target failing under one); empty: none.
  std::function<void(DumpLogLevel level, const std::string& line)> log;
};

class DumpService {
 public:
  DumpService(const config::RunConfig& config, std::filesystem::path run_dir,
              std::vector<DumpStream> streams, DumpServiceOptions options = {});
  ~DumpService();  // stop(), then joins
  DumpService(const DumpService&) = delete;
  DumpService& operator=(const DumpService&) = delete;

  // Any thread: one request in, the answer out (JSON). `http`: the request came from the
  // network, so the configured token is required.
  // `bearer`: an HTTP Authorization bearer token, an alternative to the body's "token".
  nlohmann::json handle(std::string_view body, bool http = false, const std::string& bearer = {});
  // Ends waiting for future frames; queued dumps are still written from what is retained.
  void stop();
  // Blocks until every accepted dump is written (tests, and the end of a run).
  void wait_idle();

  const DumpCounters& counters() const noexcept { return counters_; }
  // Every trigger of the run, for the run manifest: each dump as status() gives it, then the
  // refused requests.
  nlohmann::json trigger_log() const;
  // Any thread: dump `id` as the trigger log has it (its answer, state, times, error, retries,
  // dump.json's path) with its progress per stream and in total (frames and fill frames
  // written, bytes, frames planned): counts so far while it is writing, the final ones once it
  // is written or failed. An id no accepted trigger got: {"ok": false, "reason":
  // "unknown_dump", "error": ...}.
  nlohmann::json status(uint64_t id) const;

 private:
  struct StreamPlan;
  struct Job;
  nlohmann::json refuse(const std::string& reason, const std::string& message,
                        const std::string& body);
  std::optional<nlohmann::json> check_token(const std::optional<std::string>& token, bool http,
                                            const std::string& bearer, const std::string& body);
  nlohmann::json log_entry(const Job& job) const;                            // under mu_
  static nlohmann::json progress_json(const Job& job, const StreamPlan& p);  // under mu_
  std::string select(const TriggerRequest& r, std::vector<std::size_t>& chosen) const;
  std::string stream_name(std::size_t stream) const;
  std::string before_an_epoch(const std::vector<std::size_t>& chosen,
                              const std::vector<int64_t>& starts) const;
  struct Windows;
  std::optional<nlohmann::json> stream_windows(const TriggerRequest& r,
                                               const std::vector<std::size_t>& chosen,
                                               int64_t start_ns, int64_t end_ns, Windows& out,
                                               const std::string& body);
  std::optional<nlohmann::json> check_windows(const TriggerRequest& r,
                                              const std::vector<std::size_t>& chosen,
                                              const Windows& w, int64_t flat_ns,
                                              const std::string& body);
  void plan_stream(Job& job, std::size_t stream, const TriggerRequest& r);
  bool sweep(const Job& job, StreamPlan& p, int64_t& start, int64_t& end) const;
  nlohmann::json answer(const Job& job) const;
  static nlohmann::json dispersion_json(const Job& job);
  void run();
  std::filesystem::path dump_root(std::size_t target) const;
  uint64_t expected_bytes(const Job& job) const;
  void place(Job& job);
  void release(Job& job, uint64_t bytes);
  int write_streams(Job& job, writers::StreamDumper& dumper, bool stop_at_fault);
  writers::Status place_files(const Job& job, const writers::DumpFiles& names,
                              writers::DumpFiles& out) const;
  void skip_from(Job& job, std::size_t first, const std::string& why);
  bool move_elsewhere(Job& job, int err);
  void write_job(Job& job);
  nlohmann::json stream_outcome(const StreamPlan& p, nlohmann::json s) const;
  std::filesystem::path save_dump_json(const Job& job, const nlohmann::json& m,
                                       std::string& error) const;
  void finish_job(Job& job, std::chrono::steady_clock::duration took, const std::string& no_target);
  void log_outcome(const Job& job, uint64_t frames, uint64_t fills, uint64_t bytes,
                   const std::filesystem::path& saved, const std::string& json_error) const;

  const config::RunConfig& config_;
  std::filesystem::path run_dir_;
  std::vector<DumpStream> streams_;
  DumpServiceOptions options_;
  std::shared_ptr<writers::OutputTargets> targets_;  // where dumps go (as the run's files)
  std::string token_;  // retention.http_token_file's contents; empty: no token
  DumpCounters counters_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::shared_ptr<Job>> log_;  // every accepted or refused trigger
  nlohmann::json refused_log_ = nlohmann::json::array();
  uint64_t next_id_ = 1;  // after the existing dumps on every target (an earlier attempt's)
  bool busy_ = false;
  std::atomic<bool> stop_{false};
  bool quit_ = false;
  std::unique_ptr<writers::staging::PayloadStager> own_stager_;
  std::thread thread_;
};

}  // namespace rocecap::daemon
