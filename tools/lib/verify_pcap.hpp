// pcap files of a run (one sequence per interface): readable by libpcap to the end, time
// stamps never going back, and each record handed to a check of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "tools/lib/verify_files.hpp"

namespace rocecap::tools {

// Checks one record (the captured bytes and the length on the wire); empty when fine.
using PcapRecordCheck =
    std::function<std::string(std::span<const std::byte> frame, uint32_t wire_bytes)>;

struct PcapFilesResult {
  uint64_t records = 0;
  std::string problem;  // the first one, naming file and record; empty when none
};

PcapFilesResult check_pcap_files(const std::vector<ListedFile>& files,
                                 const PcapRecordCheck& check);

}  // namespace rocecap::tools
