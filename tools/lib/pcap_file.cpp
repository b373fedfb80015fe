#include "tools/lib/pcap_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace rocecap::tools {
namespace {

// pcap headers are in the writer's byte order; readers detect it from the magic. We write
// little-endian explicitly so the bytes do not depend on the host.
void le32(std::byte* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i)
    p[i] = std::byte(static_cast<uint8_t>(v >> (8 * i)));
}
void le16(std::byte* p, uint16_t v) noexcept {
  p[0] = std::byte(static_cast<uint8_t>(v));
  p[1] = std::byte(static_cast<uint8_t>(v >> 8));
}

}  // namespace

PcapFileWriter::PcapFileWriter(std::string path, std::size_t buffer_bytes)
    : path_(std::move(path)), buffer_(buffer_bytes < 65536 ? 65536 : buffer_bytes) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create", errno);
  std::byte h[24];
  le32(h, kPcapMagicNanos);
  le16(h + 4, 2);  // version 2.4
  le16(h + 6, 4);
  le32(h + 8, 0);   // thiszone
  le32(h + 12, 0);  // sigfigs
  le32(h + 16, kPcapSnaplen);
  le32(h + 20, kLinktypeEthernet);
  append(h);
}

PcapFileWriter::~PcapFileWriter() {
  if (fd_ < 0) return;
  try {
    flush();
  } catch (const std::exception&) {
    // The destructor runs on error paths too; close() is how callers learn about write errors.
  }
  ::close(fd_);
}

void PcapFileWriter::write(int64_t unix_ns, std::span<const std::byte> head,
                           std::span<const std::byte> body) {
  const auto len = static_cast<uint32_t>(head.size() + body.size());
  const int64_t ns = unix_ns < 0 ? 0 : unix_ns;
  std::byte r[16];
  le32(r, static_cast<uint32_t>(ns / 1'000'000'000));
  le32(r + 4, static_cast<uint32_t>(ns % 1'000'000'000));
  le32(r + 8, len < kPcapSnaplen ? len : kPcapSnaplen);
  le32(r + 12, len);
  append(r);
  append(head);
  append(body);
  ++records_;
}

void PcapFileWriter::append(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    if (buffer_used_ == buffer_.size()) flush();
    const std::size_t n = std::min(bytes.size(), buffer_.size() - buffer_used_);
    std::memcpy(buffer_.data() + buffer_used_, bytes.data(), n);
    buffer_used_ += n;
    bytes = bytes.subspan(n);
  }
}

void PcapFileWriter::flush() {
  std::size_t done = 0;
  while (done < buffer_used_) {
    const ssize_t n = ::write(fd_, buffer_.data() + done, buffer_used_ - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write", n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
  written_ += buffer_used_;
  buffer_used_ = 0;
}

void PcapFileWriter::close() {
  if (fd_ < 0) return;
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close", errno);
}

void PcapFileWriter::fail(const char* what, int err) const {
  throw std::runtime_error(std::string(what) + " " + path_ + ": " + std::strerror(err));
}

}  // namespace rocecap::tools
