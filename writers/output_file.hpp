// One output file: RAII fd, a large staging buffer written with whole-buffer write() calls,
// optional O_DIRECT, fsync at close.
//
// Never clobbers: the file is created with O_CREAT|O_EXCL.
//
// Records. The caller appends the pieces of one record (a CODIF frame, a pcap record) and then
// calls end_record(). When a write fails (ENOSPC, EIO, EDQUOT, EFBIG...) the file is truncated
// back to the last record boundary known to be on disk, fsynced and closed, so a raw file is
// always a whole number of frames and a pcap file ends at a record boundary. Record ends inside
// the staging buffer are remembered per 1/64th of the buffer, so a partial write keeps every
// record that reached the disk except at most those ending in its last 1/64th (16 KiB of a
// 1 MiB buffer). size() and records() then describe what stays on disk.
//
// O_DIRECT. Buffer address, offsets and lengths are multiples of kDirectAlignment. The tail that
// is not a block multiple is written at close padded with zeros through the same O_DIRECT fd, and
// the file is then cut to its real length with ftruncate (one fd, no page-cache mix). O_DIRECT is
// set with fcntl after the exclusive create; when the filesystem refuses it (ramfs, tmpfs before
// Linux 6.6, some FUSE), the file stays buffered; direct() tells which mode is in effect.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <vector>

#include "writers/status.hpp"

namespace rocecap::writers {

struct OutputOptions {
  bool direct = false;         // request O_DIRECT (falls back to buffered when refused)
  bool fsync_on_close = true;  // data is on stable storage when close() returns ok
  // Called after each successful write() with its bytes and duration (per-target metrics and
  // stall detection, writers/output_targets.hpp); one clock pair per staging buffer.
  std::function<void(uint64_t bytes, uint64_t ns)> on_write = nullptr;
  // On a write error, keep the whole records the cut removed (take_cut()), so that they can be
  // written to another target instead of being lost (spill-over).
  bool keep_cut = false;
};

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();  // closes like close(), ignoring the result
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Moving keeps borrowing the same staging buffer. The moved-from file is closed (no fd).
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;

  // `staging` is borrowed and must outlive the file; its address and size must be multiples of
  // kDirectAlignment (AlignedBuffer gives that). Fails when the file exists (EEXIST).
  Status open(const std::filesystem::path& path, const OutputOptions& options,
              std::span<std::byte> staging);

  Status append(std::span<const std::byte> bytes);
  Status append_zeros(std::size_t count);
  // `fill`: the record is a fill frame (counted apart, so a cut can tell what it removed).
  void end_record(bool fill = false) noexcept {
    ++records_;
    fills_ += fill ? 1 : 0;
    mark();
  }
  // A boundary that is not a record (a file header such as pcap's).
  void end_preamble() noexcept { mark(); }
  // `n` records (of them `fills` fill frames) appended as one piece: bytes moved from a file
  // that failed (take_cut()). Only their end is a known boundary.
  void end_records(uint64_t n, uint64_t fills) noexcept {
    records_ += n;
    fills_ += fills;
    mark();
  }
  // With keep_cut: the bytes of the whole records the last failure cut from the file, exactly
  // those between size() and the end of the last record accepted; empty when none, or when
  // they could not be kept (a part already written could not be read back).
  std::vector<std::byte> take_cut() noexcept { return std::move(cut_); }

  // Flushes the staging buffer (O_DIRECT: padded tail + ftruncate), fsyncs and closes.
  // A no-op returning ok when not open.
  Status close();

  bool is_open() const noexcept { return fd_ >= 0; }
  bool direct() const noexcept { return direct_; }
  uint64_t size() const noexcept { return pos_; }  // bytes accepted (or left after failure)
  uint64_t records() const noexcept { return records_; }
  uint64_t fill_records() const noexcept { return fills_; }  // of records()
  // The open file was unlinked (fstat st_nlink 0): everything written to it is lost with it.
  bool unlinked() const noexcept;
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  // The latest record end in one segment of the staging buffer, valid for one buffer `round`.
  struct Mark {
    uint64_t round = 0;
    uint64_t at = 0;  // offset in the buffer
    uint64_t records = 0;
    uint64_t fills = 0;
  };
  static constexpr std::size_t kSegments = 64;

  void mark() noexcept {
    last_mark_ = pos_;
    marks_[fill_ >> segment_shift_] = {round_, fill_, records_, fills_};
  }
  void find_last_mark_on_disk(uint64_t& at, uint64_t& records, uint64_t& fills) const noexcept;
  Status flush_full();
  Status write_all(const std::byte* data, std::size_t n);
  Status fail(Status error);
  void keep_cut(uint64_t keep) noexcept;
  void close_fd() noexcept;

  std::filesystem::path path_;
  std::span<std::byte> staging_;
  int fd_ = -1;
  bool direct_ = false;
  bool fsync_ = true;
  std::size_t fill_ = 0;    // bytes in staging_
  uint64_t pos_ = 0;        // logical end of file: flushed_ + fill_
  uint64_t flushed_ = 0;    // bytes handed to write() successfully
  uint64_t last_mark_ = 0;  // last record boundary
  uint64_t records_ = 0;    // records up to last_mark_
  uint64_t fills_ = 0;      // fill records among them
  uint64_t safe_mark_ = 0;  // a boundary <= flushed_: on disk for sure
  uint64_t safe_records_ = 0;
  uint64_t safe_fills_ = 0;
  uint64_t round_ = 1;  // staging buffer generation: marks of older rounds are stale
  unsigned segment_shift_ = 0;
  std::array<Mark, kSegments + 1> marks_{};  // + 1: a mark at fill_ == staging size
  std::function<void(uint64_t, uint64_t)> on_write_;
  bool keep_cut_ = false;
  std::vector<std::byte> cut_;  // filled on a failure only (an error path may allocate)
};

// Mode of every output file, before the process umask: owner read-write, group read (the
// analysis group reads the run; nobody else). Directories: kOutputDirMode (output_path.hpp).
inline constexpr unsigned kOutputFileMode = 0640;

namespace testing {
// Fault seam for tests: replaces ::write() for every OutputFile (nullptr restores it), so a test
// can make the file system answer EIO without a failing device. Not thread-safe; tests only.
using WriteFunction = ssize_t (*)(int fd, const void* data, std::size_t n);
void set_write_function(WriteFunction f) noexcept;
}  // namespace testing

}  // namespace rocecap::writers
