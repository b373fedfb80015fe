#include "capture/pcap/pcap_file_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rocecap::capture::pcap {
namespace {

constexpr std::size_t kFileHeader = 24;
constexpr std::size_t kRecordHeader = 16;
constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;

bool read_exactly(int fd, void* p, std::size_t n) {
  auto* out = static_cast<std::byte*>(p);
  while (n != 0) {
    const ssize_t r = ::read(fd, out, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    out += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace

std::optional<PcapFileReader> PcapFileReader::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  unsigned char header[kFileHeader];
  uint32_t magic = 0;
  if (read_exactly(fd, header, sizeof header)) std::memcpy(&magic, header, sizeof magic);
  const uint32_t swapped_magic = __builtin_bswap32(magic);
  const bool swapped = swapped_magic == kMagicMicro || swapped_magic == kMagicNano;
  if (!swapped && magic != kMagicMicro && magic != kMagicNano) {
    ::close(fd);
    return std::nullopt;
  }
  // Read once, front to back: let the kernel read ahead.
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return PcapFileReader(fd, swapped, (swapped ? swapped_magic : magic) == kMagicNano);
}

PcapFileReader::PcapFileReader(int fd, bool swapped, bool nano)
    : fd_(fd), swapped_(swapped), nano_(nano), buf_(std::make_unique<std::byte[]>(kBufferBytes)) {}

PcapFileReader::~PcapFileReader() {
  if (fd_ >= 0) ::close(fd_);
}

PcapFileReader::PcapFileReader(PcapFileReader&& o) noexcept
    : fd_(o.fd_),
      swapped_(o.swapped_),
      nano_(o.nano_),
      eof_(o.eof_),
      errno_(o.errno_),
      buf_(std::move(o.buf_)),
      begin_(o.begin_),
      end_(o.end_),
      offset_(o.offset_) {
  o.fd_ = -1;
}

uint32_t PcapFileReader::u32(std::size_t at) const noexcept {
  uint32_t v;
  std::memcpy(&v, buf_.get() + at, sizeof v);
  return swapped_ ? __builtin_bswap32(v) : v;
}

bool PcapFileReader::fill(std::size_t n) noexcept {
  if (end_ - begin_ >= n || eof_) return true;
  // The unread tail (less than one record) moves to the front; the rest of the buffer is
  // filled with as few read() calls as the kernel allows.
  std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
  while (end_ < n) {
    const ssize_t r = ::read(fd_, buf_.get() + end_, kBufferBytes - end_);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      errno_ = errno;
      return false;
    }
    if (r == 0) {
      eof_ = true;
      return true;
    }
    end_ += static_cast<std::size_t>(r);
  }
  return true;
}

PcapFileReader::Next PcapFileReader::next(PcapRecord& out) noexcept {
  if (!fill(kRecordHeader)) return Next::read_error;
  const std::size_t have = end_ - begin_;
  if (have == 0) return Next::end;
  if (have < kRecordHeader) return Next::truncated;
  const uint32_t caplen = u32(begin_ + 8);
  if (caplen > kBufferBytes - kRecordHeader) return Next::too_large;
  if (!fill(kRecordHeader + caplen)) return Next::read_error;
  if (end_ - begin_ < kRecordHeader + caplen) return Next::truncated;
  const int64_t frac = u32(begin_ + 4);
  out.timestamp_ns = int64_t{u32(begin_)} * 1'000'000'000 + (nano_ ? frac : frac * 1000);
  out.wire_bytes = u32(begin_ + 12);
  out.captured = {buf_.get() + begin_ + kRecordHeader, caplen};
  begin_ += kRecordHeader + caplen;
  offset_ += kRecordHeader + caplen;
  return Next::record;
}

}  // namespace rocecap::capture::pcap
