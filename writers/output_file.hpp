// One output file: RAII fd, a large staging buffer written in whole chunks, optional O_DIRECT
// (several chunks in flight through io_uring), writev straight from the caller's memory for
// buffered files, preallocation, fsync at close.
//
// Never clobbers: the file is created with O_CREAT|O_EXCL.
//
// Records. The caller appends the pieces of one record (a CODIF frame, a pcap record) and then
// calls end_record(). When a write fails (ENOSPC, EIO, EDQUOT, EFBIG...) the file is truncated
// back to the last record boundary known to be on disk, fsynced and closed, so a raw file is
// always a whole number of frames and a pcap file ends at a record boundary. Record ends not yet
// known to be on disk are remembered per 1/64th of the staging buffer (the latest in each), so
// a partial write keeps every record that reached the disk except at most those ending in its
// last 1/64th (16 KiB of a 1 MiB buffer). size() and records() then describe what stays on disk.
//
// Three ways the bytes reach the file, chosen at open():
//  - copy + write(): pieces are copied into the staging buffer, one write() per full buffer
//    (buffered files; O_DIRECT where io_uring is not available), and what it holds at each
//    flush() (the writer loop's interval: a kill loses at most that).
//  - copy + io_uring (O_DIRECT only): the staging buffer is cut into `queue depth` chunks; a
//    full chunk is submitted and the next one filled while it is in flight, so several aligned
//    writes of one file are in flight at once. A chunk is reused only after its write
//    completed. Completions are taken in file order: what is "on disk" is the contiguous prefix
//    of completed writes, so a failed write in the middle cuts the file before it.
//  - gather (buffered files with OutputOptions::gather): append_borrowed() records where the
//    caller's bytes are (an iovec) instead of copying them; small pieces (headers built on the
//    caller's stack) are still copied into the staging buffer. The batch goes out with one
//    writev() when it holds a staging buffer's worth of bytes, 1024 pieces, or when the caller
//    calls flush_borrowed(), which it must do before the borrowed memory is reused (the ring
//    consumer: before it releases the slots). O_DIRECT needs aligned buffers, offsets and
//    lengths, which ring slots are not: O_DIRECT files always copy.
//
// O_DIRECT. Buffer address, offsets and lengths are multiples of kDirectAlignment. The tail that
// is not a block multiple is written at close padded with zeros through the same O_DIRECT fd, and
// the file is then cut to its real length with ftruncate (one fd, no page-cache mix). O_DIRECT is
// set with fcntl after the exclusive create; when the filesystem refuses it (ramfs, tmpfs before
// Linux 6.6, some FUSE), the file stays buffered; direct() tells which mode is in effect.
//
// Preallocation. OutputOptions::preallocate bytes are reserved at open with
// fallocate(FALLOC_FL_KEEP_SIZE) (the file's size stays its real size, so a crash never leaves a
// zero tail), skipped on tmpfs/ramfs where it would only pin memory early; what was not used is
// released at close (FALLOC_FL_PUNCH_HOLE past the end). Refused (EOPNOTSUPP, ENOSPC): ignored,
// the writes themselves report a full disk.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "writers/status.hpp"
#include "writers/unique_fd.hpp"
#include "writers/write_backlog.hpp"

namespace rocecap::writers {

class UringQueue;

struct OutputOptions {
  bool direct = false;         // request O_DIRECT (falls back to buffered when refused)
  bool fsync_on_close = true;  // data is on stable storage when close() returns ok
  bool gather = false;         // buffered: writev from borrowed memory (append_borrowed)
  // Bytes reserved ahead of the writes (fallocate KEEP_SIZE), at most this many per file (the
  // rotation size); reserved kPreallocateStep at a time, not all at open; 0: none.
  uint64_t preallocate = 0;
  // The reservation also moves the file size ahead (fallocate mode 0; cut to the real size at
  // close). ext4 and XFS serialise O_DIRECT writes past the end of the file (ext4_dio_write_iter
  // takes the inode lock exclusively and waits for each one, IOMAP_DIO_FORCE_WAIT), so several
  // writes in flight only overlap inside the file's size. A crash leaves the reserved zeros at
  // the end of the file. Off by default: for benchmarks (writer_bench --size-ahead).
  bool size_ahead = false;
  // Called after each successful write with its bytes and duration (per-target metrics and
  // stall detection, writers/output_targets.hpp): one clock pair per write(), writev() or
  // io_uring completion (timed from its submission).
  std::function<void(uint64_t bytes, uint64_t ns)> on_write = nullptr;
  // On a write error, keep the whole records the cut removed (take_cut()), so that they can be
  // written to another target instead of being lost (spill-over).
  bool keep_cut = false;
  // The file's target's writes in flight (borrowed; null: not counted): each write is added
  // while the kernel has it (writers/write_backlog.hpp).
  WriteBacklog* backlog = nullptr;
};

// How one file's bytes are written (for tests, the manifest and benchmarks).
enum class WritePath : uint8_t { copy_write, copy_uring, gather_writev };
const char* to_string(WritePath p) noexcept;

// Preallocation grows ahead of the writes in steps of this size, never more than
// OutputOptions::preallocate per file: reserving a whole rotation size (1-4 GiB) at open for
// every file of every stream (codifhdr files included) took 13 GB of disk for a 40 MB run of
// integration_rocecapd_verbs and filled the disk; for 200 antennas it would be terabytes.
inline constexpr uint64_t kPreallocateStep = uint64_t{64} << 20;

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();  // closes like close(), ignoring the result
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  // Moving keeps borrowing the same staging buffer (and queue). The moved-from file has no fd.
  OutputFile(OutputFile&& other) noexcept = default;
  OutputFile& operator=(OutputFile&&) = delete;

  // `staging` is borrowed and must outlive the file; its address and size must be multiples of
  // kDirectAlignment (AlignedBuffer gives that). `queue` (borrowed, may be null): io_uring for
  // an O_DIRECT file; null, or a test write function set: write(). Fails when the file exists
  // (EEXIST).
  Status open(const std::filesystem::path& path, const OutputOptions& options,
              std::span<std::byte> staging, UringQueue* queue = nullptr);
  // The same, the file created as `name` in the directory open as `dir` (openat, O_NOFOLLOW):
  // an output target's files are opened below the directory it held from the start, never
  // through its path (writers/output_targets.hpp). `path` names the file (messages, path()).
  Status open_at(int dir, const std::string& name, const std::filesystem::path& path,
                 const OutputOptions& options, std::span<std::byte> staging,
                 UringQueue* queue = nullptr);

  Status append(std::span<const std::byte> bytes);
  // Like append(), but in gather mode the bytes are written from where they are, at the latest
  // by the next flush_borrowed(): they must stay valid and unchanged until then.
  Status append_borrowed(std::span<const std::byte> bytes);
  Status append_zeros(std::size_t count);
  // Writes what the file borrowed (gather mode); a no-op otherwise. On error the file is cut
  // and closed as for any write error.
  Status flush_borrowed();
  // Hands what the staging buffer holds to the kernel now, short of a full buffer, so that a
  // killed process loses none of it (the caller's flush interval bounds how old it gets). An
  // O_DIRECT file writes its whole blocks (kDirectAlignment); the last partial block stays
  // until the next flush or the close. On error the file is cut and closed as for any write
  // error.
  Status flush();
  // `fill`: the record is a fill frame (counted apart, so a cut can tell what it removed).
  void end_record(bool fill = false) noexcept {
    ++records_;
    fills_ += fill ? 1 : 0;
    mark();
  }
  // A boundary that is not a record (a file header such as pcap's).
  void end_preamble() noexcept {
    preamble_end_ = pos_;
    mark();
  }
  // `n` records (of them `fills` fill frames) appended as one piece: bytes moved from a file
  // that failed (take_cut()). Only their end is a known boundary.
  void end_records(uint64_t n, uint64_t fills) noexcept {
    records_ += n;
    fills_ += fills;
    mark();
  }
  // With keep_cut: the bytes of the whole records the last failure cut from the file, exactly
  // those between size() and the end of the last record accepted; empty when none, or when
  // they could not be kept (a part already written could not be read back). `bounds` are the
  // record ends the file knew inside them (its marks, one per bucket), ascending, the last at
  // bytes.size(): the new file marks them again, so that a short write there cuts back to the
  // last of them on disk, not to the start of all the moved bytes.
  struct CutBound {
    uint64_t end = 0;      // offset in `bytes`
    uint64_t records = 0;  // records ending in (previous end, end]
    uint64_t fills = 0;    // fill frames among them
  };
  struct Cut {
    std::vector<std::byte> bytes;
    std::vector<CutBound> bounds;
  };
  Cut take_cut() noexcept { return std::move(cut_); }

  // Writes what is pending (O_DIRECT: padded tail + ftruncate), waits for writes in flight,
  // releases unused preallocation, fsyncs (OutputOptions::fsync_on_close, unless `sync` is
  // false: the caller syncs the file system later) and closes. A no-op returning ok when not
  // open.
  Status close(bool sync = true);

  bool is_open() const noexcept { return fd_.get() >= 0; }
  bool direct() const noexcept { return direct_; }
  WritePath write_path() const noexcept { return path_kind_; }
  uint64_t size() const noexcept { return pos_; }  // bytes accepted (or left after failure)
  uint64_t records() const noexcept { return records_; }
  uint64_t fill_records() const noexcept { return fills_; }  // of records()
  // The open file was unlinked (fstat st_nlink 0): everything written to it is lost with it.
  bool unlinked() const noexcept;
  const std::filesystem::path& path() const noexcept { return path_; }
  // The file's identity when it was created (st_dev, st_ino): whether path() still names it.
  dev_t device() const noexcept { return dev_; }
  ino_t inode() const noexcept { return ino_; }

 private:
  struct Mark {
    uint64_t at = 0;  // file offset of a record end
    uint64_t records = 0;
    uint64_t fills = 0;
  };
  // One staging chunk handed to the kernel (io_uring) and not yet completed.
  struct Chunk {
    bool busy = false;
    bool done = false;
    uint64_t offset = 0;
    std::size_t len = 0;
    int64_t result = 0;
    uint64_t submit_ns = 0;   // for on_write's duration
    bool injected = false;    // fault injection: complete it with EIO (fault_injection.hpp)
    bool in_backlog = false;  // counted in backlog_ until its completion (or the close)
  };
  static constexpr std::size_t kMarks = 136;  // 64 buckets of the pending window, and slack
  static constexpr std::size_t kMaxChunks = 16;
  static constexpr std::size_t kUringChunks = 4;  // writes in flight (RotatingFile's depth)
  static constexpr std::size_t kMaxIov = 1024;    // IOV_MAX on Linux
  static constexpr std::size_t kBorrowMin = 256;  // smaller pieces are copied (cheaper)

  void mark() noexcept;
  void confirm() noexcept;  // marks now on disk (<= durable_) become the safe point
  std::byte* chunk(std::size_t i) const noexcept { return staging_.data() + i * chunk_bytes_; }
  Status copy_in(const std::byte* data, std::size_t n);
  Status submit(std::size_t len);
  Status wait_chunk_free(std::size_t i);
  Status reap_one();
  Status drain();
  Status write_all(const std::byte* data, std::size_t n);
  Status gather_copy(const std::byte* data, std::size_t n);
  Status gather_push(const std::byte* data, std::size_t n);
  Status gather_flush();
  Status fail(Status error);
  void keep_cut(const Mark& keep, uint64_t end) noexcept;
  void keep_cut_bounds(const Mark& start) noexcept;
  bool copy_unwritten(uint64_t from, uint64_t to, std::byte* out) const noexcept;
  Status release_preallocation();
  void reserve_ahead(uint64_t end) noexcept;  // preallocation up to past `end`, a step at a time
  void close_fd() noexcept;
  bool timed() const noexcept { return on_write_ || backlog_ != nullptr; }
  void backlog_done(Chunk& c) noexcept;

  std::filesystem::path path_;
  std::span<std::byte> staging_;
  UringQueue* queue_ = nullptr;  // non-null: copy_uring
  UniqueFd fd_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool direct_ = false;
  bool fsync_ = true;
  WritePath path_kind_ = WritePath::copy_write;
  uint64_t preallocated_ = 0;
  uint64_t prealloc_limit_ = 0;  // OutputOptions::preallocate; 0: reserving stopped
  bool size_ahead_ = false;
  // Copy paths: the staging buffer as n_chunks_ chunks, chunk cur_ being filled.
  std::size_t chunk_bytes_ = 0;
  std::size_t n_chunks_ = 1;
  std::size_t cur_ = 0;
  std::size_t fill_ = 0;    // bytes in chunk cur_
  std::size_t oldest_ = 0;  // oldest chunk in flight
  std::size_t busy_ = 0;    // chunks in flight
  std::array<Chunk, kMaxChunks> chunks_{};
  Status async_error_;  // first failed io_uring write, until drained and failed
  // Gather path.
  std::array<iovec, kMaxIov> iov_{};
  std::size_t iov_n_ = 0;
  std::size_t small_fill_ = 0;  // staging bytes holding copied small pieces of this batch
  uint64_t pending_ = 0;        // bytes in the batch
  // Positions (file offsets).
  uint64_t pos_ = 0;                  // logical end of file
  uint64_t submitted_ = 0;            // bytes handed to the kernel
  uint64_t durable_ = 0;              // contiguous prefix the kernel accepted
  uint64_t records_ = 0;              // records up to the last mark
  uint64_t fills_ = 0;                // fill records among them
  uint64_t preamble_end_ = 0;         // a cut never takes the file header (pcap) with it
  uint64_t gran_ = 1;                 // mark bucket: staging size / 64
  Mark safe_{};                       // latest record end <= durable_
  std::array<Mark, kMarks> marks_{};  // record ends > durable_, ascending, one per bucket
  std::size_t mark_head_ = 0;
  std::size_t mark_count_ = 0;
  std::function<void(uint64_t, uint64_t)> on_write_;
  bool keep_cut_ = false;
  bool fault_ = false;  // under the directory of an installed fault (fault_injection.hpp)
  WriteBacklog* backlog_ = nullptr;
  Cut cut_;  // filled on a failure only (an error path may allocate)
};

// Mode of every output file, before the process umask: owner read-write, group read (the
// analysis group reads the run; nobody else). Directories: kOutputDirMode (output_path.hpp).
inline constexpr unsigned kOutputFileMode = 0640;

namespace testing {
// Fault seam for tests: replaces ::write() for every OutputFile (nullptr restores it), so a test
// can make the file system answer EIO without a failing device. While set, files are written
// with it only (no io_uring; a gather batch goes out piece by piece through it). Not
// thread-safe; tests only.
using WriteFunction = ssize_t (*)(int fd, const void* data, std::size_t n);
void set_write_function(WriteFunction f) noexcept;
}  // namespace testing

}  // namespace rocecap::writers
