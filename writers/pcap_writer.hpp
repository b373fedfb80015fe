// pcap output of one interface: nanosecond-resolution classic pcap (magic 0xa1b23c4d, version
// 2.4, linktype 1 Ethernet), readable by libpcap, tcpdump, tshark and Wireshark.
//
// The 24-byte file header (at the start of every rotated file) and the 16-byte record headers are
// written straight into the staging buffer: one memcpy per piece and one write() per buffer,
// instead of pcap_dump's stdio path (two write() calls per jumbo packet). Fields are in host byte
// order, as libpcap writes them; readers detect the order from the magic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "writers/rotating_file.hpp"
#include "writers/status.hpp"
#include "writers/writer_stats.hpp"

namespace rocecap::writers {

inline constexpr uint32_t kPcapMagicNs = 0xa1b23c4d;
inline constexpr uint32_t kLinktypeEthernet = 1;
inline constexpr std::size_t kPcapFileHeaderBytes = 24;
inline constexpr std::size_t kPcapRecordHeaderBytes = 16;

struct PcapOptions {
  // Bytes kept per packet; longer packets are cut (orig_len keeps their length). 262144 is
  // libpcap's own maximum for Ethernet and holds any jumbo frame.
  uint32_t snaplen = 262144;
};

class PcapWriter {
 public:
  PcapWriter(PathMaker path_maker, const RotationOptions& rotation, PcapOptions options = {});

  // One Ethernet frame given as up to two pieces (header slot, payload slot), timestamp in
  // nanoseconds since the Unix epoch (negative clamps to 0). wire_len = 0: head + tail sizes.
  Status write_packet(int64_t unix_ns, std::span<const std::byte> head,
                      std::span<const std::byte> tail = {}, uint32_t wire_len = 0);

  Status close() { return out_.close(); }
  void request_rotation() noexcept { out_.request_rotation(); }
  // Frame index of the next frame or fill frame (write-error gaps are listed by index).
  void set_next_index(uint64_t index) noexcept { out_.set_next_index(index); }
  Status check_storage() { return out_.check_storage(); }
  // What is buffered, to the kernel (RotatingFile::flush; CaptureWriter::flush's interval).
  Status flush() { return out_.flush(); }
  // From now on the frame bytes handed to the writer (not the headers, which callers build on
  // their stack) stay valid until flush_borrowed(): a buffered file writes them from where
  // they are with writev instead of copying them (OutputFile's gather path).
  void borrow_payloads() noexcept {
    borrow_ = true;
    out_.enable_gather();
  }
  // Writes what was borrowed; call before the borrowed memory is reused.
  Status flush_borrowed() { return out_.flush_borrowed(); }
  const RotatingFile& output() const noexcept { return out_; }
  const WriterStats& stats() const noexcept { return out_.stats(); }
  const std::vector<FileRecord>& files() { return out_.files(); }
  const std::vector<FileRecord>& lost_files() const noexcept { return out_.lost_files(); }

 private:
  RotatingFile out_;
  PcapOptions options_;
  bool borrow_ = false;
};

}  // namespace rocecap::writers
