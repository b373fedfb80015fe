#include "writers/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <utility>

#include "writers/aligned_buffer.hpp"

namespace rocecap::writers {
namespace {

testing::WriteFunction g_write = nullptr;

ssize_t do_write(int fd, const void* data, std::size_t n) {
  if (g_write != nullptr) return g_write(fd, data, n);
  return ::write(fd, data, n);
}

int open_excl(const std::filesystem::path& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, kOutputFileMode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// O_DIRECT is switched on after the exclusive create: some filesystems (ramfs) create the file
// and then refuse O_DIRECT in open(), which would leave a file that a retry could not O_EXCL.
bool enable_direct(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_DIRECT) == 0;
}

uint64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

bool aligned(std::span<std::byte> s) {
  return reinterpret_cast<std::uintptr_t>(s.data()) % kDirectAlignment == 0 &&
         s.size() % kDirectAlignment == 0 && !s.empty();
}

}  // namespace

void testing::set_write_function(WriteFunction f) noexcept {
  g_write = f;
}

bool OutputFile::unlinked() const noexcept {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && st.st_nlink == 0;
}

OutputFile::~OutputFile() {
  (void)close();
}

OutputFile::OutputFile(OutputFile&& o) noexcept
    : path_(std::move(o.path_)),
      staging_(o.staging_),
      fd_(std::exchange(o.fd_, -1)),
      direct_(o.direct_),
      fsync_(o.fsync_),
      fill_(o.fill_),
      pos_(o.pos_),
      flushed_(o.flushed_),
      last_mark_(o.last_mark_),
      records_(o.records_),
      fills_(o.fills_),
      safe_mark_(o.safe_mark_),
      safe_records_(o.safe_records_),
      safe_fills_(o.safe_fills_),
      round_(o.round_),
      segment_shift_(o.segment_shift_),
      marks_(o.marks_),
      on_write_(std::move(o.on_write_)),
      keep_cut_(o.keep_cut_),
      cut_(std::move(o.cut_)) {}

Status OutputFile::open(const std::filesystem::path& path, const OutputOptions& options,
                        std::span<std::byte> staging) {
  if (is_open())
    return Status::error(EBUSY, "open " + path.string() + ": writer already open", path);
  if (!aligned(staging))
    return Status::error(EINVAL, "open " + path.string() + ": bad staging", path);
  const int fd = open_excl(path);
  if (fd < 0) return sys_error(errno, "open", path);
  const bool direct = options.direct && enable_direct(fd);
  path_ = path;
  staging_ = staging;
  fd_ = fd;
  direct_ = direct;
  fsync_ = options.fsync_on_close;
  on_write_ = options.on_write;
  keep_cut_ = options.keep_cut;
  cut_.clear();
  fill_ = 0;
  pos_ = flushed_ = last_mark_ = records_ = fills_ = safe_mark_ = safe_records_ = safe_fills_ = 0;
  ++round_;
  segment_shift_ = 0;
  while ((staging.size() >> segment_shift_) > kSegments)
    ++segment_shift_;
  return {};
}

Status OutputFile::append(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    if (fill_ == staging_.size()) {
      if (Status s = flush_full(); !s) return s;
    }
    const std::size_t n = std::min(bytes.size(), staging_.size() - fill_);
    std::memcpy(staging_.data() + fill_, bytes.data(), n);
    fill_ += n;
    pos_ += n;
    bytes = bytes.subspan(n);
  }
  return {};
}

Status OutputFile::append_zeros(std::size_t count) {
  while (count > 0) {
    if (fill_ == staging_.size()) {
      if (Status s = flush_full(); !s) return s;
    }
    const std::size_t n = std::min(count, staging_.size() - fill_);
    std::memset(staging_.data() + fill_, 0, n);
    fill_ += n;
    pos_ += n;
    count -= n;
  }
  return {};
}

Status OutputFile::flush_full() {
  if (!is_open()) return Status::error(EBADF, "write " + path_.string() + ": file not open", path_);
  if (Status s = write_all(staging_.data(), fill_); !s) return fail(std::move(s));
  fill_ = 0;
  // Flushing happens when the buffer is full, in the middle of a record at the latest, so the
  // last completed record ends at or before what is now on disk.
  safe_mark_ = last_mark_;
  safe_records_ = records_;
  safe_fills_ = fills_;
  ++round_;
  return {};
}

Status OutputFile::write_all(const std::byte* data, std::size_t n) {
  while (n > 0) {
    const uint64_t start = on_write_ ? now_ns() : 0;
    const ssize_t w = do_write(fd_, data, n);
    if (w > 0 && on_write_) on_write_(static_cast<uint64_t>(w), now_ns() - start);
    if (w < 0) {
      if (errno == EINTR) continue;
      return sys_error(errno, "write", path_);
    }
    if (w == 0) return sys_error(EIO, "write", path_);
    data += w;
    n -= static_cast<std::size_t>(w);
    flushed_ += static_cast<uint64_t>(w);
  }
  return {};
}

// The last record end at or before flushed_, while the staging buffer is being written.
void OutputFile::find_last_mark_on_disk(uint64_t& at, uint64_t& records,
                                        uint64_t& fills) const noexcept {
  at = safe_mark_;
  records = safe_records_;
  fills = safe_fills_;
  const uint64_t buffer_start = pos_ - fill_;
  if (flushed_ < buffer_start) return;
  const uint64_t on_disk = flushed_ - buffer_start;
  for (std::size_t i = std::min<uint64_t>(on_disk >> segment_shift_, kSegments) + 1; i-- > 0;) {
    const Mark& m = marks_[i];
    if (m.round == round_ && m.at <= on_disk) {
      at = buffer_start + m.at;
      records = m.records;
      fills = m.fills;
      return;
    }
  }
}

// Keeps what is on disk valid: cut back to the last whole record that reached the disk.
Status OutputFile::fail(Status error) {
  uint64_t keep = 0;
  uint64_t keep_records = 0;
  uint64_t keep_fills = 0;
  find_last_mark_on_disk(keep, keep_records, keep_fills);
  if (keep_cut_) keep_cut(keep);
  std::string message = error.message();
  if (::ftruncate(fd_, static_cast<off_t>(keep)) != 0) {
    message += "; truncating to the last whole record failed: ";
    message += std::generic_category().message(errno);
  } else if (fsync_) {
    (void)::fsync(fd_);  // best effort: the original error is what matters
  }
  close_fd();
  pos_ = flushed_ = last_mark_ = safe_mark_ = keep;
  records_ = safe_records_ = keep_records;
  fills_ = safe_fills_ = keep_fills;
  fill_ = 0;
  ++round_;
  return Status::error(error.code(), std::move(message), error.path());
}

// Saves the bytes [keep, last_mark_) before the cut: those still in the staging buffer from
// there, the part written before it (a record that straddled the previous buffer) read back
// through a second descriptor (the file's own may be O_WRONLY|O_DIRECT).
void OutputFile::keep_cut(uint64_t keep) noexcept {
  cut_.clear();
  if (last_mark_ <= keep) return;
  const uint64_t buffer_start = pos_ - fill_;
  try {
    cut_.resize(last_mark_ - keep);
  } catch (...) {
    cut_.clear();
    return;
  }
  std::size_t at = 0;
  if (keep < buffer_start) {
    const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    std::size_t n = std::min(buffer_start, last_mark_) - keep;
    while (fd >= 0 && n > 0) {
      const ssize_t r = ::pread(fd, cut_.data() + at, n, static_cast<off_t>(keep + at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      at += static_cast<std::size_t>(r);
      n -= static_cast<std::size_t>(r);
    }
    if (fd >= 0) ::close(fd);
    if (n > 0) {
      cut_.clear();  // the records cannot be moved whole: the caller counts them lost
      return;
    }
  }
  if (last_mark_ <= buffer_start) return;
  const uint64_t from = std::max(keep, buffer_start) - buffer_start;
  std::memcpy(cut_.data() + at, staging_.data() + from, last_mark_ - buffer_start - from);
}

Status OutputFile::close() {
  if (!is_open()) return {};
  if (fill_ > 0) {
    std::size_t n = fill_;
    if (direct_) {
      n = (fill_ + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment;
      std::memset(staging_.data() + fill_, 0, n - fill_);
    }
    if (Status s = write_all(staging_.data(), n); !s) return fail(std::move(s));
    if (direct_ && n != fill_ && ::ftruncate(fd_, static_cast<off_t>(pos_)) != 0) {
      return fail(sys_error(errno, "truncate", path_));
    }
    flushed_ = pos_;
    fill_ = 0;
  }
  if (fsync_ && ::fsync(fd_) != 0) {
    Status s = sys_error(errno, "fsync", path_);
    close_fd();
    return s;
  }
  close_fd();
  return {};
}

void OutputFile::close_fd() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace rocecap::writers
