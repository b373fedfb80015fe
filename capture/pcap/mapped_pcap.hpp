// Zero-copy reader of a classic pcap file (not pcapng): the file is mapped read-only and each
// record is handed out as a span into the mapping.
//
// Why not libpcap's own reader: it fread()s every record into its buffer, and from there the
// Ingest copies it again into a ring slot. From the mapping the Ingest's copy is the only one
// (BENCHMARKS.md, "Capture pipeline end to end"). libpcap still opens the file first
// (PcapSource::open_file): its checks and error texts stay the reference, and pcapng files
// keep going through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace rocecap::pcapsrc {

struct MappedRecord {
  std::span<const std::byte> captured;
  uint32_t wire_bytes = 0;
  int64_t timestamp_ns = 0;
};

class MappedPcap {
 public:
  // The mapped file when it is a classic pcap file (either byte order, micro- or nanosecond
  // timestamps); nullopt when it is something else (pcapng) or cannot be mapped (a pipe),
  // and the caller reads it with libpcap.
  static std::optional<MappedPcap> open(const std::string& path);
  ~MappedPcap();
  MappedPcap(MappedPcap&& o) noexcept;
  MappedPcap& operator=(MappedPcap&&) = delete;
  MappedPcap(const MappedPcap&) = delete;
  MappedPcap& operator=(const MappedPcap&) = delete;

  enum class Next : uint8_t { record, end, truncated };
  // The next record. `truncated`: the file ends inside a record header or its data (a capture
  // cut short); the offset of that record is then truncated_at().
  Next next(MappedRecord& out) noexcept;
  uint64_t truncated_at() const noexcept { return pos_; }

 private:
  MappedPcap(const std::byte* base, std::size_t size, bool swapped, bool nano) noexcept
      : base_(base), size_(size), swapped_(swapped), nano_(nano) {}
  uint32_t u32(std::size_t at) const noexcept;

  const std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::size_t pos_ = 24;  // after the file header
  bool swapped_ = false;
  bool nano_ = false;
};

}  // namespace rocecap::pcapsrc
