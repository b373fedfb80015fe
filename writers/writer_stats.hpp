// Counters of one writer (one stream and format, or one pcap interface). Owned and updated by
// the writer's thread only: plain integers, read by whoever that thread hands a snapshot to.
#pragma once

#include <cstdint>
#include <string>

namespace rocecap::writers {

struct WriterStats {
  uint64_t bytes_written = 0;   // bytes in the files (file headers included), net of truncation
  uint64_t frames_written = 0;  // frames / pcap records in the files, fill frames included
  uint64_t fill_frames = 0;     // fill frames handed to the file (raw, codifhdr)
  uint64_t frames_dropped = 0;  // not in any file because of a write or open error
  uint64_t files_opened = 0;
  uint64_t write_errors = 0;  // failed open / write / close events
  std::string last_error;     // message of the latest error (path + strerror); empty if none
};

}  // namespace rocecap::writers
