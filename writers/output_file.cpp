#include "writers/output_file.hpp"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>

#include "writers/aligned_buffer.hpp"
#include "writers/fault_injection.hpp"
#include "writers/uring_queue.hpp"

namespace rocecap::writers {
namespace {

testing::WriteFunction g_write = nullptr;

ssize_t do_write(int fd, const void* data, std::size_t n) {
  if (g_write != nullptr) return g_write(fd, data, n);
  return ::write(fd, data, n);
}

// With the test seam set, a gather batch goes through it piece by piece (a short count ends
// the call, as a short writev would).
ssize_t do_writev(int fd, const iovec* iov, int n) {
  if (g_write == nullptr) return ::writev(fd, iov, n);
  ssize_t total = 0;
  for (int i = 0; i < n; ++i) {
    const ssize_t w = g_write(fd, iov[i].iov_base, iov[i].iov_len);
    if (w < 0) return total > 0 ? total : w;
    total += w;
    if (static_cast<std::size_t>(w) < iov[i].iov_len) break;
  }
  return total;
}

uint64_t iov_bytes(const iovec* iov, int n) noexcept {
  uint64_t total = 0;
  for (int i = 0; i < n; ++i)
    total += iov[i].iov_len;
  return total;
}

// Source of zero bytes for gathered fill frames: written from here, never copied.
alignas(kDirectAlignment) const std::byte kZeros[64 << 10] = {};

// `dir` < 0: `name` is the whole path. Otherwise `name` is created in the directory open as
// `dir`, not following a symlink there (a target's files are opened below its held directory).
int open_excl(int dir, const char* name) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
  int fd;
  do {
    fd = dir < 0 ? ::open(name, flags, kOutputFileMode)
                 : ::openat(dir, name, flags | O_NOFOLLOW, kOutputFileMode);
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

// tmpfs and ramfs: memory, no fragmentation to avoid; preallocating would only pin pages early.
bool memory_backed(int fd) {
  struct statfs s {};
  return ::fstatfs(fd, &s) == 0 && (s.f_type == TMPFS_MAGIC || s.f_type == RAMFS_MAGIC);
}

}  // namespace

const char* to_string(WritePath p) noexcept {
  switch (p) {
    case WritePath::copy_write:
      return "copy+write";
    case WritePath::copy_uring:
      return "copy+io_uring";
    case WritePath::gather_writev:
      return "writev";
  }
  return "?";
}

void testing::set_write_function(WriteFunction f) noexcept {
  g_write = f;
}

bool OutputFile::unlinked() const noexcept {
  struct stat st {};
  return is_open() && ::fstat(fd_.get(), &st) == 0 && st.st_nlink == 0;
}

OutputFile::~OutputFile() {
  (void)close();
}

Status OutputFile::open(const std::filesystem::path& path, const OutputOptions& options,
                        std::span<std::byte> staging, UringQueue* queue) {
  return open_at(-1, path.string(), path, options, staging, queue);
}

Status OutputFile::open_at(int dir, const std::string& name, const std::filesystem::path& path,
                           const OutputOptions& options, std::span<std::byte> staging,
                           UringQueue* queue) {
  if (is_open())
    return Status::error(EBUSY, "open " + path.string() + ": writer already open", path);
  if (!aligned(staging))
    return Status::error(EINVAL, "open " + path.string() + ": bad staging", path);
  fault_ = fault::covers(path);
  if (fault_ && fault::fail_open()) return fault::error("open", path);
  const int fd = open_excl(dir, name.c_str());
  if (fd < 0) return sys_error(errno, "open", path);
  fd_.reset(fd);
  struct stat st {};
  dev_ = ino_ = 0;
  if (::fstat(fd, &st) == 0) dev_ = st.st_dev, ino_ = st.st_ino;
  direct_ = options.direct && enable_direct(fd);
  path_ = path;
  staging_ = staging;
  fsync_ = options.fsync_on_close;
  on_write_ = options.on_write;
  keep_cut_ = options.keep_cut;
  backlog_ = options.backlog;
  cut_.bytes.clear();
  cut_.bounds.clear();
  queue_ = direct_ && g_write == nullptr ? queue : nullptr;
  path_kind_ = queue_ != nullptr            ? WritePath::copy_uring
               : !direct_ && options.gather ? WritePath::gather_writev
                                            : WritePath::copy_write;
  n_chunks_ = 1;
  if (queue_ != nullptr) {
    n_chunks_ = std::clamp<std::size_t>(staging.size() / kDirectAlignment, 1, kUringChunks);
  }
  chunk_bytes_ = staging.size() / n_chunks_ / kDirectAlignment * kDirectAlignment;
  cur_ = fill_ = oldest_ = busy_ = 0;
  chunks_ = {};
  async_error_ = {};
  iov_n_ = small_fill_ = 0;
  pending_ = pos_ = submitted_ = durable_ = records_ = fills_ = preamble_end_ = 0;
  safe_ = {};
  mark_head_ = mark_count_ = 0;
  gran_ = std::max<uint64_t>(staging.size() / 64, 1);
  preallocated_ = 0;
  size_ahead_ = options.size_ahead;
  prealloc_limit_ = options.preallocate > 0 && !memory_backed(fd) ? options.preallocate : 0;
  reserve_ahead(0);
  return {};
}

void OutputFile::mark() noexcept {
  const Mark m{pos_, records_, fills_};
  if (mark_count_ > 0) {
    Mark& back = marks_[(mark_head_ + mark_count_ - 1) % kMarks];
    // The latest record end per bucket (and, were the window ever wider than the marks, per
    // last bucket): a cut loses at most the records ending in one bucket.
    if (back.at / gran_ == pos_ / gran_ || mark_count_ == kMarks) {
      back = m;
      return;
    }
  }
  marks_[(mark_head_ + mark_count_) % kMarks] = m;
  ++mark_count_;
}

void OutputFile::confirm() noexcept {
  while (mark_count_ > 0 && marks_[mark_head_].at <= durable_) {
    safe_ = marks_[mark_head_];
    mark_head_ = (mark_head_ + 1) % kMarks;
    --mark_count_;
  }
}

Status OutputFile::append(std::span<const std::byte> bytes) {
  if (path_kind_ == WritePath::gather_writev) return gather_copy(bytes.data(), bytes.size());
  return copy_in(bytes.data(), bytes.size());
}

Status OutputFile::append_borrowed(std::span<const std::byte> bytes) {
  if (path_kind_ != WritePath::gather_writev) return copy_in(bytes.data(), bytes.size());
  if (bytes.size() < kBorrowMin) return gather_copy(bytes.data(), bytes.size());
  return gather_push(bytes.data(), bytes.size());
}

Status OutputFile::append_zeros(std::size_t count) {
  if (path_kind_ == WritePath::gather_writev) {
    while (count > 0) {
      const std::size_t n = std::min(count, sizeof kZeros);
      if (Status s = gather_push(kZeros, n); !s) return s;
      count -= n;
    }
    return {};
  }
  return copy_in(nullptr, count);
}

// Copy paths; data == nullptr: zeros.
Status OutputFile::copy_in(const std::byte* data, std::size_t n) {
  while (n > 0) {
    if (fill_ == chunk_bytes_) {
      if (Status s = submit(chunk_bytes_); !s) return s;
    }
    const std::size_t k = std::min(n, chunk_bytes_ - fill_);
    std::byte* to = chunk(cur_) + fill_;
    if (data != nullptr) {
      std::memcpy(to, data, k);
      data += k;
    } else {
      std::memset(to, 0, k);
    }
    fill_ += k;
    pos_ += k;
    n -= k;
  }
  return {};
}

// Hands `len` bytes of chunk cur_ to the kernel (len > fill_: zero padding, O_DIRECT tail).
Status OutputFile::submit(std::size_t len) {
  if (!is_open()) return Status::error(EBADF, "write " + path_.string() + ": file not open", path_);
  reserve_ahead(submitted_ + len);
  if (queue_ == nullptr) {
    if (Status s = write_all(chunk(cur_), len); !s) return fail(std::move(s));
    fill_ = 0;
    return {};
  }
  Chunk& c = chunks_[cur_];
  c = {true, false, submitted_, len, 0, timed() ? now_ns() : 0, fault_ && fault::fail_write(len)};
  int error = 0;
  if (!queue_->write(fd_.get(), chunk(cur_), len, submitted_, cur_, error)) {
    c.busy = false;
    Status s = sys_error(error, "io_uring write", path_);
    (void)drain();
    return fail(std::move(s));
  }
  if (backlog_ != nullptr) {
    backlog_->begin(len, c.submit_ns);
    c.in_backlog = true;
  }
  submitted_ += len;
  ++busy_;
  cur_ = (cur_ + 1) % n_chunks_;
  fill_ = 0;
  if (Status s = wait_chunk_free(cur_); !s) {
    (void)drain();
    return fail(std::move(s));
  }
  return {};
}

Status OutputFile::wait_chunk_free(std::size_t i) {
  while (chunks_[i].busy) {
    if (Status s = reap_one(); !s) return s;
  }
  return async_error_;
}

// Takes one completion, then retires completed chunks in file order.
Status OutputFile::reap_one() {
  uint64_t tag = 0;
  int64_t result = 0;
  if (!queue_->wait(tag, result)) return Status::error(EIO, "io_uring: lost a write", path_);
  if (tag >= n_chunks_) {
    if (async_error_.ok()) async_error_ = sys_error(static_cast<int>(-result), "io_uring", path_);
    return async_error_;
  }
  chunks_[tag].done = true;
  chunks_[tag].result = chunks_[tag].injected ? -EIO : result;
  backlog_done(chunks_[tag]);
  while (busy_ > 0 && chunks_[oldest_].done) {
    Chunk& c = chunks_[oldest_];
    if (async_error_.ok()) {
      if (c.result < 0) {
        async_error_ = c.injected ? fault::error("write", path_)
                                  : sys_error(static_cast<int>(-c.result), "write", path_);
      } else if (static_cast<std::size_t>(c.result) < c.len) {
        // A short write (the disk filled mid-chunk): the rest with pwrite, which reports why.
        durable_ = c.offset + static_cast<uint64_t>(c.result);
        const std::byte* rest = chunk(oldest_) + c.result;
        std::size_t left = c.len - static_cast<std::size_t>(c.result);
        while (left > 0 && async_error_.ok()) {
          const ssize_t w = ::pwrite(fd_.get(), rest, left, static_cast<off_t>(durable_));
          if (w < 0 && errno == EINTR) continue;
          if (w <= 0) {
            async_error_ = sys_error(w < 0 ? errno : EIO, "write", path_);
            break;
          }
          rest += w;
          left -= static_cast<std::size_t>(w);
          durable_ += static_cast<uint64_t>(w);
        }
      } else {
        durable_ = c.offset + c.len;
        if (on_write_) on_write_(c.len, now_ns() - c.submit_ns);
      }
      confirm();
    }
    c.busy = false;
    oldest_ = (oldest_ + 1) % n_chunks_;
    --busy_;
  }
  return async_error_;
}

// Waits for every write in flight; the first error, if any.
Status OutputFile::drain() {
  while (queue_ != nullptr && busy_ > 0) {
    if (Status s = reap_one(); !s && queue_->in_flight() == 0) break;
  }
  return async_error_;
}

Status OutputFile::write_all(const std::byte* data, std::size_t n) {
  while (n > 0) {
    if (fault_ && fault::fail_write(n)) return fault::error("write", path_);
    const uint64_t start = timed() ? now_ns() : 0;
    if (backlog_ != nullptr) backlog_->begin(n, start);
    const ssize_t w = do_write(fd_.get(), data, n);
    if (backlog_ != nullptr) backlog_->end(n, start);
    if (w > 0 && on_write_) on_write_(static_cast<uint64_t>(w), now_ns() - start);
    if (w < 0) {
      if (errno == EINTR) continue;
      return sys_error(errno, "write", path_);
    }
    if (w == 0) return sys_error(EIO, "write", path_);
    data += w;
    n -= static_cast<std::size_t>(w);
    durable_ += static_cast<uint64_t>(w);
    submitted_ = durable_;
    confirm();
  }
  return {};
}

// Gather path: small or short-lived bytes are copied into the staging buffer (adjacent copies
// share one iovec).
Status OutputFile::gather_copy(const std::byte* data, std::size_t n) {
  while (n > 0) {
    if (small_fill_ == staging_.size() || iov_n_ == kMaxIov) {
      if (Status s = gather_flush(); !s) return fail(std::move(s));
    }
    const std::size_t k = std::min(n, staging_.size() - small_fill_);
    std::byte* to = staging_.data() + small_fill_;
    std::memcpy(to, data, k);
    iovec* last = iov_n_ > 0 ? &iov_[iov_n_ - 1] : nullptr;
    if (last != nullptr && static_cast<std::byte*>(last->iov_base) + last->iov_len == to) {
      last->iov_len += k;
    } else {
      iov_[iov_n_++] = {to, k};
    }
    small_fill_ += k;
    pending_ += k;
    pos_ += k;
    data += k;
    n -= k;
  }
  if (pending_ >= staging_.size()) {
    if (Status s = gather_flush(); !s) return fail(std::move(s));
  }
  return {};
}

Status OutputFile::gather_push(const std::byte* data, std::size_t n) {
  if (iov_n_ == kMaxIov) {
    if (Status s = gather_flush(); !s) return fail(std::move(s));
  }
  iov_[iov_n_++] = {const_cast<std::byte*>(data), n};  // writev's iovec is not const
  pending_ += n;
  pos_ += n;
  if (pending_ >= staging_.size()) {
    if (Status s = gather_flush(); !s) return fail(std::move(s));
  }
  return {};
}

Status OutputFile::gather_flush() {
  if (!is_open()) return Status::error(EBADF, "write " + path_.string() + ": file not open", path_);
  reserve_ahead(durable_ + pending_);
  std::size_t first = 0;
  while (first < iov_n_) {
    const int n = static_cast<int>(std::min(iov_n_ - first, kMaxIov));
    const uint64_t bytes = fault_ || backlog_ != nullptr ? iov_bytes(&iov_[first], n) : 0;
    const bool injected = fault_ && fault::fail_write(bytes);
    const uint64_t start = timed() ? now_ns() : 0;
    if (backlog_ != nullptr) backlog_->begin(bytes, start);
    const ssize_t w = injected ? -1 : do_writev(fd_.get(), &iov_[first], n);
    if (backlog_ != nullptr) backlog_->end(bytes, start);
    if (w > 0 && on_write_) on_write_(static_cast<uint64_t>(w), now_ns() - start);
    if (w <= 0 && (injected || !(w < 0 && errno == EINTR))) {
      const int error = w < 0 && !injected ? errno : EIO;
      // What is left unwritten stays described by iov_[0, iov_n_) from durable_ on, for
      // keep_cut (the bytes are still where they were: the caller releases after the flush).
      std::move(iov_.begin() + static_cast<std::ptrdiff_t>(first),
                iov_.begin() + static_cast<std::ptrdiff_t>(iov_n_), iov_.begin());
      iov_n_ -= first;
      return injected ? fault::error("write", path_) : sys_error(error, "write", path_);
    }
    if (w < 0) continue;
    durable_ += static_cast<uint64_t>(w);
    submitted_ = durable_;
    confirm();
    // Skip what was written; a short write resumes inside an iovec.
    std::size_t left = static_cast<std::size_t>(w);
    while (first < iov_n_ && left >= iov_[first].iov_len) {
      left -= iov_[first].iov_len;
      ++first;
    }
    if (left > 0) {
      iov_[first].iov_base = static_cast<std::byte*>(iov_[first].iov_base) + left;
      iov_[first].iov_len -= left;
    }
  }
  iov_n_ = 0;
  small_fill_ = 0;
  pending_ = 0;
  return {};
}

Status OutputFile::flush_borrowed() {
  if (path_kind_ != WritePath::gather_writev || !is_open() || iov_n_ == 0) return {};
  if (Status s = gather_flush(); !s) return fail(std::move(s));
  return {};
}

Status OutputFile::flush() {
  if (!is_open()) return {};
  if (path_kind_ == WritePath::gather_writev) {
    if (iov_n_ == 0) return {};
    if (Status s = gather_flush(); !s) return fail(std::move(s));
    return {};
  }
  // O_DIRECT: aligned lengths only. The partial block moves to the start of the chunk written
  // next (with io_uring, the next chunk once it is free; else the same one after write()).
  const std::size_t len = direct_ ? fill_ / kDirectAlignment * kDirectAlignment : fill_;
  if (len == 0) return {};
  const std::size_t rest = fill_ - len;
  const std::byte* tail = chunk(cur_) + len;
  if (Status s = submit(len); !s) return s;  // submit() failed the file already
  if (rest > 0) std::memmove(chunk(cur_), tail, rest);
  fill_ = rest;
  return {};
}

// Keeps what is on disk valid: cut back to the last whole record that reached the disk.
Status OutputFile::fail(Status error) {
  const Mark keep = safe_;
  // The records cut start after the file's header (pcap): when the first write failed, the
  // header itself is cut too, but the new file has its own (moved along, it would sit in the
  // middle of the new file as a garbage record: found by integration_rocecapd_targets_eio_direct).
  if (keep_cut_) {
    const Mark start{std::max(keep.at, preamble_end_), keep.records, keep.fills};
    keep_cut(start, mark_count_ > 0 ? marks_[(mark_head_ + mark_count_ - 1) % kMarks].at : keep.at);
  }
  std::string message = error.message();
  if (::ftruncate(fd_.get(), static_cast<off_t>(keep.at)) != 0) {
    message += "; truncating to the last whole record failed: ";
    message += std::generic_category().message(errno);
  } else if (fsync_) {
    (void)::fsync(fd_.get());  // best effort: the original error is what matters
  }
  // The cut freed every block past `keep`, the reservation included; truncating again to the
  // old end (release_preallocation) would grow the file back with zeros.
  preallocated_ = prealloc_limit_ = 0;
  close_fd();
  pos_ = submitted_ = durable_ = keep.at;
  records_ = keep.records;
  fills_ = keep.fills;
  fill_ = 0;
  iov_n_ = small_fill_ = 0;
  pending_ = 0;
  mark_count_ = 0;
  return Status::error(error.code(), std::move(message), error.path());
}

// Saves the bytes [keep, end) before the cut: the part that reached the file read back through
// a second descriptor (the file's own may be O_WRONLY|O_DIRECT), the rest from where the write
// path still holds it (staging chunks, or the gather batch's iovecs).
void OutputFile::keep_cut(const Mark& start, uint64_t end) noexcept {
  cut_.bytes.clear();
  cut_.bounds.clear();
  const uint64_t keep = start.at;
  if (end <= keep) return;
  try {
    cut_.bytes.resize(end - keep);
  } catch (...) {
    cut_.bytes.clear();
    return;
  }
  const uint64_t on_disk = std::min(durable_, end);
  std::size_t at = 0;
  if (keep < on_disk) {
    // Through the open descriptor, not the path: the path may no longer name the file (its
    // target unmounted or its directory replaced), the descriptor always does.
    char self[32];
    std::snprintf(self, sizeof self, "/proc/self/fd/%d", fd_.get());
    int fd = ::open(self, O_RDONLY | O_CLOEXEC);
    if (fd < 0) fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    std::size_t n = on_disk - keep;
    while (fd >= 0 && n > 0) {
      const ssize_t r = ::pread(fd, cut_.bytes.data() + at, n, static_cast<off_t>(keep + at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      at += static_cast<std::size_t>(r);
      n -= static_cast<std::size_t>(r);
    }
    if (fd >= 0) ::close(fd);
    if (n > 0) {
      cut_.bytes.clear();  // the records cannot be moved whole: the caller counts them lost
      return;
    }
  }
  const uint64_t from = std::max(keep, on_disk);
  if (from < end && !copy_unwritten(from, end, cut_.bytes.data() + at)) {
    cut_.bytes.clear();
    return;
  }
  keep_cut_bounds(start);
}

// The marks past `start` (those not yet on disk: all of marks_) as bounds of the cut bytes. Moved
// as one record run, a short write in the new file cut back to before all of them: on the last
// target with room, hundreds of KB of whole records that had reached the disk were cut and
// lost (integration_rocecapd_targets_spill, t0 left free while frames were lost).
void OutputFile::keep_cut_bounds(const Mark& start) noexcept {
  const uint64_t size = cut_.bytes.size();
  Mark prev = start;
  try {
    cut_.bounds.reserve(mark_count_);
    for (std::size_t i = 0; i < mark_count_; ++i) {
      const Mark& m = marks_[(mark_head_ + i) % kMarks];
      if (m.at <= prev.at || m.records <= prev.records) continue;
      if (m.at - start.at > size) break;
      cut_.bounds.push_back({m.at - start.at, m.records - prev.records, m.fills - prev.fills});
      prev = m;
    }
  } catch (...) {
    cut_.bounds.clear();
    prev = start;
  }
  if (prev.at - start.at != size) {  // the last mark is the cut's end; otherwise one run
    cut_.bounds.clear();
    cut_.bounds.push_back({size, records_ - start.records, fills_ - start.fills});
  }
}

// Copies file bytes [from, to) (all >= durable_, < pos_) from the write path's memory.
bool OutputFile::copy_unwritten(uint64_t from, uint64_t to, std::byte* out) const noexcept {
  if (path_kind_ == WritePath::gather_writev) {
    uint64_t off = durable_;
    for (std::size_t i = 0; i < iov_n_ && from < to; ++i) {
      const auto* base = static_cast<const std::byte*>(iov_[i].iov_base);
      const uint64_t len = iov_[i].iov_len;
      if (from < off + len) {
        const uint64_t k = std::min(to, off + len) - from;
        std::memcpy(out, base + (from - off), k);
        out += k;
        from += k;
      }
      off += len;
    }
    return from == to;
  }
  // Copy paths: the chunk being filled starts at submitted_; chunks handed to the kernel keep
  // their bytes until reused, and none is reused before the failure is handled.
  while (from < to) {
    const std::byte* src = nullptr;
    uint64_t avail = 0;
    const uint64_t fill_start = pos_ - fill_;
    if (from >= fill_start) {
      src = chunk(cur_) + (from - fill_start);
      avail = pos_ - from;
    } else {
      for (std::size_t i = 0; i < n_chunks_ && src == nullptr; ++i) {
        const Chunk& c = chunks_[i];
        if ((i != cur_ || fill_ == 0) && c.len > 0 && from >= c.offset && from < c.offset + c.len) {
          src = chunk(i) + (from - c.offset);
          avail = c.offset + c.len - from;
        }
      }
    }
    if (src == nullptr || avail == 0) return false;
    const uint64_t k = std::min(avail, to - from);
    std::memcpy(out, src, k);
    out += k;
    from += k;
  }
  return true;
}

Status OutputFile::close(bool sync) {
  if (!is_open()) return {};
  if (path_kind_ == WritePath::gather_writev) {
    if (iov_n_ > 0) {
      if (Status s = gather_flush(); !s) return fail(std::move(s));
    }
  } else if (fill_ > 0) {
    const std::size_t n =
        direct_ ? (fill_ + kDirectAlignment - 1) / kDirectAlignment * kDirectAlignment : fill_;
    std::memset(chunk(cur_) + fill_, 0, n - fill_);
    const uint64_t end = pos_;
    const bool padded = n != fill_;
    if (Status s = submit(n); !s) return s;  // submit() failed the file already
    if (queue_ != nullptr) {
      if (Status s = drain(); !s) return fail(std::move(s));
    }
    if (padded && ::ftruncate(fd_.get(), static_cast<off_t>(end)) != 0) {
      return fail(sys_error(errno, "truncate", path_));
    }
    durable_ = submitted_ = pos_ = end;
    confirm();
  }
  if (queue_ != nullptr) {
    if (Status s = drain(); !s) return fail(std::move(s));
  }
  if (Status s = release_preallocation(); !s) return fail(std::move(s));
  if (sync && fsync_ && ::fsync(fd_.get()) != 0) {
    Status s = sys_error(errno, "fsync", path_);
    close_fd();
    return s;
  }
  close_fd();
  return {};
}

// Blocks reserved past the end stay allocated after close: give them back. ftruncate to the
// size the file already has frees every block past it on ext4 (ext4_setattr -> ext4_truncate;
// a PUNCH_HOLE past i_size is a no-op there), measured in WritePath.PreallocationIsReleasedAtClose.
void OutputFile::reserve_ahead(uint64_t end) noexcept {
  if (prealloc_limit_ == 0 || end < preallocated_) return;
  const uint64_t want = std::min(prealloc_limit_, (end / kPreallocateStep + 1) * kPreallocateStep);
  if (want <= preallocated_) return;
  if (::fallocate(fd_.get(), size_ahead_ ? 0 : FALLOC_FL_KEEP_SIZE,
                  static_cast<off_t>(preallocated_),
                  static_cast<off_t>(want - preallocated_)) != 0) {
    prealloc_limit_ = 0;  // full, or not supported: the writes themselves say ENOSPC
    return;
  }
  preallocated_ = want;
}

// A failure with the reservation kept past the size (the default, FALLOC_FL_KEEP_SIZE) only
// leaves blocks allocated: the file holds its records and nothing else. With size_ahead the
// reservation is part of the file's size, so a failed truncate would leave zeros after the
// last record: an error, as any failed write.
Status OutputFile::release_preallocation() {
  if (preallocated_ <= pos_ || !is_open()) return {};
  const int rc = ::ftruncate(fd_.get(), static_cast<off_t>(pos_));
  preallocated_ = 0;
  if (rc != 0 && size_ahead_) return sys_error(errno, "truncate", path_);
  return {};
}

void OutputFile::backlog_done(Chunk& c) noexcept {
  if (!c.in_backlog) return;
  c.in_backlog = false;
  backlog_->end(c.len, c.submit_ns);
}

// Writes whose completion never came (a lost completion, a drain cut short) leave the backlog
// with the file: it never counts writes of a closed file.
void OutputFile::close_fd() noexcept {
  for (Chunk& c : chunks_)
    backlog_done(c);
  fd_.reset();
}

}  // namespace rocecap::writers
