// `rocecap inspect RUN_DIR | manifest.json`: a whole run read as one. The manifest lists each
// stream's raw files and each interface's pcap files in order; with several output targets
// (output.directories) each file is read from its target's directory (the manifest's
// "targets"), so a run spread over N disks reports as one: per stream, frames, gaps,
// duplicates and late frames over all of its files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "tools/lib/inspect.hpp"

namespace rocecap::tools {

// One manifest stream's raw files, or one interface's pcap files.
struct RunInspectPart {
  std::string owner;               // "239.1.1.1:4000 a1" or "interface rec0"
  std::string format;              // the manifest's file format: "raw" or "pcap"
  std::vector<std::string> files;  // read, in manifest order (absolute paths)
  InspectReport report;            // over all of them
};

struct RunInspectReport {
  std::string run;       // the manifest's "run"
  std::string manifest;  // its path
  uint64_t targets = 1;  // output targets the files were read from
  std::vector<RunInspectPart> parts;
  std::vector<std::string> skipped;     // files not inspected, and why (headers only, stripped)
  std::vector<std::string> unreadable;  // listed files that could not be read, and why
};

// A run directory (its manifest.json) or the manifest itself. vdif_frames_per_second: as
// `--vdif` (0: the manifest's run file says, for a VDIF run). Throws std::runtime_error when
// the manifest cannot be read; a listed file that cannot be read is named in `unreadable`.
// A VDIF run's pcap files are read as VDIF datagrams, behind VTP numbers when the run file
// says `vtp` (or `vtp` is given).
RunInspectReport inspect_run(const std::filesystem::path& run_or_manifest,
                             uint64_t vdif_frames_per_second = 0, bool vtp = false);

// Whether `path` names a run (a directory, or a file named manifest.json) rather than a file.
bool is_run_path(const std::filesystem::path& path);

nlohmann::json to_json(const RunInspectReport& report);
void print_table(const RunInspectReport& report, std::ostream& out);

}  // namespace rocecap::tools
