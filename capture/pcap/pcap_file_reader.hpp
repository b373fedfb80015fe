// Reader of a classic pcap file (not pcapng) that hands each record out as a span into its own
// read buffer: one read() per buffer of records, and no copy in user space before the Ingest
// copies the frame into its ring slot.
//
// Why not libpcap's reader: it fread()s every record into its own buffer through stdio, one
// more copy per frame (BENCHMARKS.md, "Capture pipeline end to end"). Why not mmap: about 15 %
// faster in that benchmark, but a file truncated by someone else during the replay would kill
// the daemon with SIGBUS; read() just sees the end. libpcap still opens the file first
// (PcapSource::open_file): its checks and error texts stay the reference, and pcapng files
// keep going through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace rocecap::capture::pcap {

struct PcapRecord {
  std::span<const std::byte> captured;  // valid until the next call of next()
  uint32_t wire_bytes = 0;
  int64_t timestamp_ns = 0;
};

class PcapFileReader {
 public:
  // Big enough for the largest record libpcap accepts (262144 bytes), small enough to stay in
  // the L2 cache between read() and the Ingest's copy.
  static constexpr std::size_t kBufferBytes = std::size_t{512} << 10;

  // The reader when `path` is a classic pcap file (either byte order, micro- or nanosecond
  // timestamps), positioned at its first record; nullopt for anything else (pcapng, a file
  // that cannot be opened or read), which the caller leaves to libpcap.
  static std::optional<PcapFileReader> open(const std::string& path);
  ~PcapFileReader();
  PcapFileReader(PcapFileReader&& o) noexcept;
  PcapFileReader& operator=(PcapFileReader&&) = delete;
  PcapFileReader(const PcapFileReader&) = delete;
  PcapFileReader& operator=(const PcapFileReader&) = delete;

  enum class Next : uint8_t {
    record,
    end,
    truncated,   // the file ends inside a record (a capture cut short)
    too_large,   // a record longer than kBufferBytes: not a file libpcap would read either
    read_error,  // read() failed: read_errno()
  };
  Next next(PcapRecord& out) noexcept;
  // File offset of the next record; after truncated or too_large, of the bad record.
  uint64_t offset() const noexcept { return offset_; }
  int read_errno() const noexcept { return errno_; }

 private:
  PcapFileReader(int fd, bool swapped, bool nano);
  uint32_t u32(std::size_t at) const noexcept;
  // Makes at least `n` bytes available from begin_, unless the file ends first.
  bool fill(std::size_t n) noexcept;

  int fd_ = -1;
  bool swapped_ = false;
  bool nano_ = false;
  bool eof_ = false;
  int errno_ = 0;
  std::unique_ptr<std::byte[]> buf_;
  std::size_t begin_ = 0;  // next record in buf_
  std::size_t end_ = 0;    // end of the bytes read
  uint64_t offset_ = 24;   // file offset of buf_[begin_]
};

}  // namespace rocecap::capture::pcap
