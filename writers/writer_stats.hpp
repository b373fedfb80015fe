// Counters of one writer (one stream and format, or one pcap interface). Owned and updated by
// the writer's thread only: plain integers, read by whoever that thread hands a snapshot to.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace rocecap::writers {

// Records kept out of the files: with reason "write_error" (WriterStats::write_loss) or
// "storage_lost" (WriterStats::storage_loss).
struct WriteLoss {
  uint64_t frames = 0;  // received frames (pcap: records) not in any file
  uint64_t fills = 0;   // fill frames not in any file
  // [first frame index, count] of every record missing from the files, fill frames included,
  // adjacent ranges merged; bounded (RotationOptions::max_gaps_listed), the rest counted.
  std::vector<std::pair<uint64_t, uint64_t>> gaps;
  uint64_t gaps_not_listed = 0;
};

struct WriterStats {
  uint64_t bytes_written = 0;   // bytes in the files (file headers included), net of truncation
  uint64_t frames_written = 0;  // frames / pcap records in the files, fill frames included
  uint64_t fill_frames = 0;     // fill frames in the files (raw, codifhdr), net of truncation
  uint64_t frames_dropped = 0;  // not in any file: write_loss.frames + .fills, or after close()
  uint64_t files_opened = 0;
  uint64_t write_errors = 0;    // failed open / write / close events
  uint64_t storage_errors = 0;  // of those, storage lost (is_storage_loss) or a file unlinked
  uint64_t retries = 0;         // new files opened after an error
  uint64_t spills = 0;          // errors whose data went to another target (not write_errors)
  std::string last_error;       // message of the latest error (path + strerror); empty if none
  WriteLoss write_loss;
  // Records written to files that were then lost with their output target (its run directory
  // removed or replaced, its mount changed, the file deleted): the loss reason "storage_lost".
  // Also in frames_dropped; no longer in bytes_written, frames_written, fill_frames.
  WriteLoss storage_loss;
};

}  // namespace rocecap::writers
