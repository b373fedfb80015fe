// A classic pcap savefile written directly (24-byte file header, 16-byte record headers,
// nanosecond timestamps, Ethernet link type) through one large buffer: jumbo frames cost one
// memcpy each instead of libpcap's two write() calls per packet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rocecap::tools {

inline constexpr uint32_t kPcapMagicNanos = 0xa1b23c4d;
inline constexpr uint32_t kPcapMagicMicros = 0xa1b2c3d4;
inline constexpr uint32_t kLinktypeEthernet = 1;
inline constexpr uint32_t kPcapSnaplen = 262144;

class PcapFileWriter {
 public:
  // Creates (truncates) `path` and writes the file header. Throws std::runtime_error with the
  // path and the system's reason on failure (here and in every call below).
  explicit PcapFileWriter(std::string path, std::size_t buffer_bytes = std::size_t{8} << 20);
  ~PcapFileWriter();  // flushes and closes; errors there are lost: call close() to see them
  PcapFileWriter(const PcapFileWriter&) = delete;
  PcapFileWriter& operator=(const PcapFileWriter&) = delete;

  // One record: the frame is `head` followed by `body`, stamped `unix_ns`.
  void write(int64_t unix_ns, std::span<const std::byte> head, std::span<const std::byte> body);

  // Flushes and closes; throws on ENOSPC, EIO, ...
  void close();

  uint64_t records() const noexcept { return records_; }
  uint64_t bytes_written() const noexcept { return written_ + buffer_used_; }

 private:
  void append(std::span<const std::byte> bytes);
  void flush();
  [[noreturn]] void fail(const char* what, int err) const;

  std::string path_;
  int fd_ = -1;
  std::vector<std::byte> buffer_;
  std::size_t buffer_used_ = 0;
  uint64_t written_ = 0;
  uint64_t records_ = 0;
};

}  // namespace rocecap::tools
