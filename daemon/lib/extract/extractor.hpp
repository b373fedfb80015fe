// `rocecap extract` (doc/dumps.md, "Extracting from a recording"): cuts a time window, flat or
// dispersed, for chosen antennas or groups out of a run's recorded raw files, over all its
// output targets, and writes what a triggered dump of that window would have written: per
// stream the time-aligned raw (and codifhdr / vdifhdr) file with fill frames where the stream
// lost frames, and a dump.json of the same shape. Where the recording lacks frames a live dump
// would have had (a write-error gap, a file lost with its target) it writes fill frames and
// lists them with the reason; the parts of a window outside the recording are `not_recorded`.
// It seeks (recording.hpp, frame_file.hpp): its cost grows with the window, not the recording.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/run_config.hpp"

namespace rocecap::daemon {

struct ExtractOptions {
  std::filesystem::path run_dir;
  std::string request;  // a trigger request (JSON, doc/dumps.md): start, end, antennas, dm, ...
  // Where the files go; empty: <run_dir>/extracts/<NNNN>[-<label>]. Must not hold files.
  std::filesystem::path out_dir;
  // Empty: the run's retention.formats without pcap (the raw files keep no network headers),
  // or raw when the run had no retention section.
  std::vector<config::OutputFormat> formats;
  std::function<int64_t()> now_ns;  // wall clock for dump.json; empty: CLOCK_REALTIME
};

struct ExtractOutcome {
  nlohmann::json dump;  // dump.json as written
  std::filesystem::path dir;
  bool ok = false;  // written without errors (parts of the window may be not_recorded)
};

// Throws ExtractError (frame_file.hpp) for a request or recording it cannot serve, naming the
// field or file.
ExtractOutcome extract(const ExtractOptions& options);

}  // namespace rocecap::daemon
