// `rocecap inspect`: what a pcap file or a raw CODIF file holds, per stream: frame counts,
// first/last frame, gaps, duplicates, late and invalid frames, rejected frames by reason, and
// the first frame's header. Offline and whole-file: simplicity over speed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "capture/codif/header.hpp"

namespace rocecap::tools {

struct InspectStream {
  // pcap: the datagrams' group:port and source. CODIF file: empty/0, the header ids identify it.
  std::string group;
  uint16_t port = 0;
  std::string source;
  uint16_t station_id = 0;
  uint16_t thread_id = 0;
  uint16_t group_id = 0;

  uint64_t records = 0;     // datagrams (pcap) or frames (CODIF file) of this stream
  uint64_t frames = 0;      // records with a valid CODIF header, copies included
  uint64_t duplicates = 0;  // valid records whose frame index was seen before
  uint64_t late = 0;        // valid records below the highest index seen before them
  uint64_t invalid = 0;     // valid records with the CODIF invalid bit set
  std::map<std::string, uint64_t> rejected;  // records without a usable frame, by reason
  std::optional<capture::codif::Header> first_header;
  capture::codif::Timing timing;

  // Filled by finish(): over distinct frame indices.
  uint64_t unique_frames = 0;
  uint64_t first_index = 0, last_index = 0;
  int64_t first_time_ns = 0, last_time_ns = 0;
  std::vector<std::pair<uint64_t, uint64_t>> gaps;  // [first missing index, count]
  uint64_t missing = 0;

  std::vector<uint64_t> indices;  // every valid record's index, arrival order (until finish)
  uint64_t highest = 0;
};

struct InspectReport {
  std::string file;
  std::string format;     // "pcap", "codif" or "vdif"
  std::string precision;  // pcap: "ns" or "us"
  std::string payload;    // pcap: what its UDP payloads were read as, "codif" or "vdif"
  uint64_t records = 0;
  std::map<std::string, uint64_t> rejected;  // records of no stream (not IPv4/UDP, ...)
  std::vector<InspectStream> streams;        // in order of first appearance
};

// Reads `path` (pcap detected by magic, else raw CODIF); throws std::runtime_error naming the
// file and what is wrong with it.
// With vdif_frames_per_second (doc/vdif.md; the frame rate is not in VDIF headers) VDIF is
// read: a raw VDIF file, streams by (station, thread), or a pcap whose UDP payloads are VDIF
// frames, preceded by the 8-byte VTP sequence number with `vtp`, streams by (group, port,
// source, thread). A pcap whose payloads are VDIF read without it is refused saying so.
InspectReport inspect_file(const std::string& path, uint64_t vdif_frames_per_second = 0,
                           bool vtp = false);

struct InspectSlots;

// Several files of one kind (raw CODIF, raw VDIF or pcap) read as one: a stream's frames over
// all of them, in the order added (a run's files in manifest order, inspect_run.hpp).
class InspectAccumulator {
 public:
  explicit InspectAccumulator(std::string name);
  ~InspectAccumulator();
  InspectAccumulator(const InspectAccumulator&) = delete;
  InspectAccumulator& operator=(const InspectAccumulator&) = delete;
  // Throws std::runtime_error naming the file (unreadable, malformed, of another kind).
  void add_file(const std::string& path, uint64_t vdif_frames_per_second = 0, bool vtp = false);
  uint64_t files() const noexcept { return files_; }
  InspectReport finish();  // once, after the last file

 private:
  InspectReport report_;
  std::unique_ptr<InspectSlots> slots_;
  uint64_t files_ = 0;
};

// Analyses in-memory input (what inspect_file reads): for tests.
InspectReport inspect_pcap_bytes(std::span<const std::byte> file, const std::string& name);
InspectReport inspect_codif_bytes(std::span<const std::byte> file, const std::string& name);

nlohmann::json to_json(const InspectReport& report);
nlohmann::json header_json(const capture::codif::Header& h, const capture::codif::Timing& t);
void print_table(const InspectReport& report, std::ostream& out);

}  // namespace rocecap::tools
