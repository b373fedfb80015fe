// A sequence of OutputFiles for one writer: rotates at a size, always at a record boundary.
//
// Rotation. Before a record that would take the current file past `max_bytes`, the file is
// closed and the next sequence number opened; a record is never split, so a record larger than
// `max_bytes` sits alone in its file. max_bytes = 0: no rotation. Files are opened lazily, at
// the first record (an idle stream leaves no empty file). Each file starts with `preamble`
// (the pcap file header; empty for raw and codifhdr).
//
// Errors. A failed open or write is counted, kept in stats().last_error and returned once (the
// caller logs it). The broken file is closed with its on-disk bytes valid (OutputFile). The
// writer then drops records, counting each in stats().write_loss (reason write_error: received
// and fill records apart, and the frame indices as ranges), and retries after a bounded
// exponential back-off (RetryOptions: 100 ms doubling to 2 s by default) by opening the NEXT
// sequence number: a new file boundary, never an append to the broken file. The new file starts
// with the first record after the retry; the missing indices are in write_loss.gaps, so file
// offsets stay a function of time within each file and the gaps between files are listed.
// Dropping never blocks: the caller (the ring consumer) keeps releasing slots while the disk is
// full, so the capture side never stalls on the storage.
//
// Several targets (RotationOptions::targets with more than one directory): each file is placed
// on a target by OutputTargets when it is opened. A write, close or open that fails because the
// target is full or failing (ENOSPC, EDQUOT, EFBIG, EIO, EROFS, ENOENT...) takes that target out
// of rotation and the writer goes on at once in a new file (the next sequence number) on another
// target: the whole records the failure cut from the broken file are moved there first, then
// the record being written. Nothing is lost and nothing is returned as an error (the target's
// state change is reported once by OutputTargets); stats().spills counts these moves. Only when
// no target is in rotation does the single-target behaviour above apply (records dropped and
// counted in write_loss, back-off, retry). A file open on a target that another writer took out
// of rotation is finished at the next record, which starts a new file elsewhere.
//
// Frame indices. Each record has an index, by default the previous one + 1; the caller sets it
// with set_next_index() where the stream jumps (resync, first frame). Records a failure cut from
// the end of a file are reckoned back from the record being written.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "writers/aligned_buffer.hpp"
#include "writers/output_file.hpp"
#include "writers/output_targets.hpp"
#include "writers/status.hpp"
#include "writers/unique_fd.hpp"
#include "writers/uring_queue.hpp"
#include "writers/writer_stats.hpp"

namespace rocecap::writers {

// Produces the path of file `seq` (e.g. a config name template placed with
// place_in_directory), creating directories as needed.
using PathMaker = std::function<Status(uint64_t seq, std::filesystem::path& out)>;
// With output targets: the name of file `seq` relative to a target directory (the run file's
// template expanded), placed with place_in_directory on the target chosen.
using NameMaker = std::function<std::string(uint64_t seq)>;

// After a write error: wait `first`, then twice as long after each failed retry, at most `max`.
// A retry whose file took whole records starts the back-off again from `first`.
struct RetryOptions {
  std::chrono::nanoseconds first = std::chrono::milliseconds(100);
  std::chrono::nanoseconds max = std::chrono::seconds(2);
};

// Monotonic nanoseconds; read only while a writer waits to retry (never per written record).
using MonotonicClock = int64_t (*)();
int64_t monotonic_ns() noexcept;

enum class RecordKind : uint8_t { received, fill };

// O_DIRECT writes in flight per file through io_uring (each RotationOptions::buffer_bytes).
inline constexpr unsigned kUringDepth = 4;

struct RotationOptions {
  uint64_t max_bytes = 0;  // rotate before exceeding this; 0 = never
  // Staging buffer, one write() per buffer. 1 MiB rather than 8: the buffers of all streams
  // stay in the L3 between the frame copies and write() (6 streams x 8 MiB already exceed a
  // 32 MiB L3); raw replay into tmpfs took 5-18 % less CPU time (BENCHMARKS.md).
  std::size_t buffer_bytes = 1u << 20;
  uint64_t first_seq = 0;
  OutputOptions output;
  RetryOptions retry;
  // O_DIRECT files through io_uring (several writes in flight) where the kernel allows it;
  // false, or ROCECAP_IO_URING=off: write() (the reason is in RotatingFile::io_engine()).
  bool io_uring = true;
  // Reserve max_bytes at each file's open (fallocate KEEP_SIZE; not on tmpfs), released past
  // the real end at close: a file of a rotating run is contiguous on disk and a full disk is
  // met at open rather than mid-file where the file system allows.
  bool preallocate = true;
  // fsync each file as rotation closes it. false: a rotated file is closed without fsync and
  // close() syncs each file system that holds such files once (syncfs), at the end. An fsync
  // makes the device flush its write cache: O_DIRECT writes to the disk stopped for
  // 0.2-2.5 s per flush on the VM measured, the writer waiting meanwhile, and the rings
  // overflowed (BENCHMARKS.md, "Rotation's fsync"). Until the end a rotated file is as
  // durable as the open one: on the disk's cache and in the kernel's writeback.
  bool fsync_rotated = true;
  MonotonicClock clock = monotonic_ns;   // tests substitute their own
  std::size_t max_gaps_listed = 100000;  // WriteLoss::gaps bound
  // Output targets shared by every writer of the run, and the file names on them; when set,
  // they replace the PathMaker (see "Several targets" above).
  std::shared_ptr<OutputTargets> targets;
  NameMaker names;
};

// One piece of a record: bytes, or (data == nullptr) `size` zero bytes. `borrowed`: the bytes
// stay valid until the writer's flush_borrowed() (ring slots not yet released), so a gathering
// file writes them from where they are instead of copying them (OutputFile::append_borrowed).
struct Piece {
  const std::byte* data = nullptr;
  std::size_t size = 0;
  bool borrowed = false;
};
inline Piece bytes_piece(std::span<const std::byte> s) noexcept {
  return {s.data(), s.size()};
}
inline Piece borrowed_piece(std::span<const std::byte> s, bool borrowed = true) noexcept {
  return {s.data(), s.size(), borrowed};
}
inline Piece zeros_piece(std::size_t n) noexcept {
  return {nullptr, n};
}

// A file written (or being written), for the run manifest.
struct FileRecord {
  std::filesystem::path path;
  uint64_t seq = 0;
  uint64_t bytes = 0;    // current size; final once closed
  uint64_t records = 0;  // frames / pcap records in it
  bool direct = false;   // O_DIRECT in effect
  bool open = false;
  bool failed = false;        // a write error closed it early (contents up to `bytes` are valid)
  std::size_t target = 0;     // index in the run's output targets (0 with one directory)
  uint64_t first_index = 0;   // frame index of its first record (valid when records > 0)
  uint64_t fills = 0;         // of `records`, fill frames
  uint64_t dev = 0, ino = 0;  // the file as created: whether `path` still names it
  std::string lost;           // why it is gone (RotatingFile::lost_files()); empty: it is not
};

class RotatingFile {
 public:
  // Allocates the staging buffer (throws std::bad_alloc); nothing is opened yet.
  RotatingFile(PathMaker path_maker, const RotationOptions& options,
               std::span<const std::byte> preamble = {});
  ~RotatingFile();  // close(), result ignored: call close() to see it
  RotatingFile(const RotatingFile&) = delete;
  RotatingFile& operator=(const RotatingFile&) = delete;
  // Movable (writers can live in a std::vector); the staging buffer moves with its file.
  RotatingFile(RotatingFile&&) noexcept = default;
  RotatingFile& operator=(RotatingFile&&) = delete;

  // Writes one whole record. Returns an error once per failure event; records dropped while
  // waiting to retry after an error return ok (they are counted in stats().write_loss).
  Status write(std::span<const Piece> pieces, RecordKind kind = RecordKind::received);
  // Frame index of the next record (default: the previous one + 1, from 0).
  void set_next_index(uint64_t index) noexcept { next_index_ = index; }
  // Writes the bytes the current file borrowed (Piece::borrowed); must be called before that
  // memory is reused. An error is handled (counted, file cut, retry later) and returned once.
  Status flush_borrowed();
  // Hands what the current file buffers to the kernel (OutputFile::flush): the caller's clock
  // bounds how much a killed process loses, whatever the record rate. Errors as flush_borrowed.
  Status flush();
  // Files opened from now on gather borrowed pieces with writev when they are not O_DIRECT.
  void enable_gather() noexcept { options_.output.gather = true; }
  // How O_DIRECT files are written: "io_uring", or why not ("" before the first direct open).
  const std::string& io_engine() const noexcept { return io_engine_; }
  // The write path of the current (or last) file.
  WritePath write_path() const noexcept { return file_.write_path(); }
  // Storage checks, once a second off the hot path (the writer loop): whether the open file was
  // unlinked (counted in storage_errors, returned once per file), and with several targets,
  // after a target was lost (OutputTargets::loss_epoch), which of this writer's files on it are
  // gone with it: each leaves files() for lost_files(), its records are counted in
  // stats().storage_loss (reason storage_lost), and one error names them.
  Status check_storage();
  // Final: flushes, fsyncs and closes the current file, then syncs the file systems of the
  // files rotation closed without fsync; later records are counted as dropped.
  Status close();
  // File systems holding files closed without fsync, not yet synced (0 after close()).
  std::size_t unsynced_file_systems() const noexcept;
  // The next record starts a new file (SIGHUP), unless the current file is still empty.
  void request_rotation() noexcept { rotate_requested_ = virtual_records_ > 0; }

  // Files in the order opened (failed opens are not listed). Sizes of the open file are live.
  const std::vector<FileRecord>& files();
  // Files written and then lost with their storage (FileRecord::lost says why), in order.
  const std::vector<FileRecord>& lost_files() const noexcept { return lost_files_; }
  const WriterStats& stats() const noexcept { return stats_; }
  WriterStats& stats() noexcept { return stats_; }

 private:
  bool rotate_requested_ = false;
  bool spread() const noexcept { return targets_ && targets_->size() > 1; }
  Status start_file(uint64_t seq);
  Status open_on_target(uint64_t seq);
  Status open_path(const std::filesystem::path& path, uint64_t seq, std::size_t target,
                   int dir = -1, const std::string& leaf = {});
  Status check_unlinked();
  Status drop_lost_files();
  void drop_file(std::size_t i, const std::string& why);
  void release_target(uint64_t bytes) noexcept;
  Status finish_file(uint64_t index, bool rotating = false);
  void note_file_system(std::size_t target) noexcept;  // of the file just opened
  void forget_lost_file_systems() noexcept;
  bool defer_sync() noexcept;  // whether the open file may close without fsync
  Status sync_file_systems();
  Status append(std::span<const Piece> pieces, uint64_t records, uint64_t fills, uint64_t first,
                unsigned depth = 0);
  bool spill(Status& s, uint64_t& cut_records, uint64_t& cut_fills, uint64_t cut_first,
             unsigned depth);
  Status append_moved(const OutputFile::Cut& moved, uint64_t first, unsigned depth);
  void record_error(const Status& s);
  Status cut_failed(Status s, uint64_t index, uint64_t bytes_before, uint64_t records_before,
                    uint64_t fills_before);
  UringQueue* queue_for_direct();
  void suspend(bool progressed);
  bool retry_due();
  void lose(uint64_t first, uint64_t count, uint64_t fills);
  void lose_to(WriteLoss& l, uint64_t first, uint64_t count, uint64_t fills);
  void forget_if_empty();  // after an error: a file left without a whole record is removed
  void sync_current() noexcept;

  PathMaker path_maker_;
  RotationOptions options_;
  std::vector<std::byte> preamble_;
  AlignedBuffer staging_;
  std::unique_ptr<UringQueue> queue_;  // made at the first O_DIRECT open (when allowed)
  std::string io_engine_;
  OutputFile file_;
  std::vector<FileRecord> files_;
  std::vector<FileRecord> lost_files_;
  WriterStats stats_;
  bool started_ = false;
  bool closed_ = false;
  bool suspended_ = false;  // after an error, until the retry opens a file
  bool unlink_reported_ = false;
  int64_t retry_at_ns_ = 0;
  std::chrono::nanoseconds backoff_{0};
  uint64_t next_index_ = 0;
  uint64_t seq_ = 0;
  uint64_t virtual_bytes_ = 0;  // size of file seq_ (its records accepted so far)
  uint64_t virtual_records_ = 0;
  std::shared_ptr<OutputTargets> targets_;
  std::size_t target_ = 0;   // of the open file
  uint64_t expected_ = 0;    // bytes reserved for it on its target
  bool placed_ = false;      // a reservation is held on target_
  uint64_t seen_epoch_ = 0;  // the targets' loss epoch this writer's files were checked at
  // Without fsync_rotated: a directory of each file system files were opened on (syncfs at
  // close() where one was closed without fsync: `deferred`), and the targets they were on.
  struct Unsynced {
    dev_t dev = 0;
    bool deferred = false;
    std::filesystem::path directory;
    UniqueFd fd;
    std::vector<std::size_t> targets;
  };
  std::vector<Unsynced> unsynced_;
};

}  // namespace rocecap::writers
