// What a killed writer leaves: a file whose last frame or record is cut short (its last write()
// was one staging buffer, ending anywhere), or zeros after the last record (the O_DIRECT tail
// padding). scan_file walks the records of one output file, finds the end of the last whole one
// and, when asked, cuts the file there (ftruncate + fsync), so every reader sees whole records.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "capture/codif/header.hpp"
#include "capture/vdif/header.hpp"

namespace rocecap::rundir {

enum class FileKind : uint8_t {
  raw_codif,  // CODIF frames: 64-byte header + data; the frame size is in every header
  raw_data,   // raw with headers stripped (or format udp): no boundary in the data itself
  codifhdr,   // 64-byte CODIF headers
  pcap,       // pcap file: 24-byte file header, then 16-byte record header + data
  raw_vdif,   // VDIF frames: 32- (or legacy 16-) byte header + data; the length is in every header
  vdifhdr,    // VDIF headers only (32 or 16 bytes each)
};

struct FileScan {
  uint64_t bytes_on_disk = 0;
  uint64_t bytes_whole = 0;      // end of the last whole record (== bytes_on_disk: nothing to cut)
  uint64_t records = 0;          // whole frames / headers / pcap records
  uint64_t frame_bytes = 0;      // CODIF/VDIF files: the frame size their headers declare
  uint64_t header_bytes = 0;     // CODIF/VDIF files: the header size (VDIF: 32, legacy 16)
  uint64_t flagged_invalid = 0;  // frames with the invalid bit (fill frames among them)
  // CODIF/VDIF files: the first and last whole frame (absolute index and start time).
  std::optional<uint64_t> first_index, last_index;
  int64_t first_unix_ns = 0, last_unix_ns = 0;
  std::string stop;     // why the walk stopped before bytes_on_disk; empty when it did not
  bool checked = true;  // false: the kind has no boundaries to check (raw_data without a size)
  bool trimmed = false;
};

struct ScanOptions {
  capture::codif::SyncSet syncs = capture::codif::SyncSet::defaults();
  capture::vdif::Rate vdif_rate;  // VDIF files: frames per second (not in their headers)
  uint64_t record_bytes = 0;      // raw_data: bytes per record when known (0: cannot be checked)
  bool trim = false;              // cut the file at bytes_whole
};

// Throws std::runtime_error when the file cannot be read (or cut, with opts.trim).
FileScan scan_file(const std::filesystem::path& path, FileKind kind, const ScanOptions& opts);

// For a file already known to be complete (closed before the kill, its size as listed): the
// counts of a CODIF or VDIF file (raw with headers, headers only) from its first and last
// header and its
// size, reading 128 bytes instead of every header. nullopt for the other kinds, or when the
// two headers and the size do not agree (then scan_file it). Never cuts.
std::optional<FileScan> quick_scan(const std::filesystem::path& path, FileKind kind,
                                   const ScanOptions& opts);

}  // namespace rocecap::rundir
