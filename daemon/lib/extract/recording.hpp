// A run directory read back for `rocecap extract` (doc/dumps.md, "Extracting from a
// recording"): the run file from the manifest's snapshot, and per stream its raw files over
// every output target, each opened once (two header reads), ordered by first frame index, with
// what the manifest says the files lack (write-error gaps, files lost with their target).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "config/run_config.hpp"
#include "daemon/lib/extract/frame_file.hpp"

namespace rocecap::daemon {

// Index ranges [first, first + count) the recording lacks, with why.
struct MissingRange {
  uint64_t first = 0, count = 0;
  std::string reason;
};

struct RecordedStream {
  config::StreamRef ref;
  const nlohmann::json* manifest = nullptr;  // its entry in the manifest's "streams"
  std::vector<FrameFile> files;              // raw files with whole frames, by first index
  std::vector<MissingRange> missing;         // what the manifest lists as not in the files
  std::vector<std::string> problems;         // listed files that could not be read, and why
};

struct Recording {
  std::filesystem::path run_dir;
  nlohmann::json manifest;
  config::RunConfig config;
  FrameFormat format;
  std::vector<config::StreamRef> refs;  // the run's streams (config order)
  // The manifest's entry of each stream of `refs` (null: not in the manifest).
  std::vector<const nlohmann::json*> entries;
};

// Reads <run_dir>/manifest.json and the run file it holds; throws ExtractError naming the file
// and what is wrong (no manifest, not a run's, a run file that does not load, a format with
// no frames to read: udp).
Recording read_recording(const std::filesystem::path& run_dir);

// Opens stream `i`'s raw files (as listed, resolved against the run's output targets).
RecordedStream open_stream(const Recording& r, std::size_t i);

}  // namespace rocecap::daemon
