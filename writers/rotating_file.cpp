#include "writers/rotating_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "writers/output_path.hpp"

namespace rocecap::writers {
namespace {

// Errors that say the target itself is full or failing (rather than, say, a name clash): they
// take it out of rotation when there are others.
bool target_fault(int err) noexcept {
  return err == ENOSPC || err == EDQUOT || err == EFBIG || is_storage_loss(err);
}

// The size a file may reach, reserved on its target while it is open.
uint64_t expected_size(const RotationOptions& o) noexcept {
  return o.max_bytes > 0 ? o.max_bytes : uint64_t{1} << 30;
}

// Whether the file's path still names the file written (same device and inode).
bool still_there(const FileRecord& f) noexcept {
  struct stat st {};
  return ::stat(f.path.c_str(), &st) == 0 && st.st_dev == f.dev && st.st_ino == f.ino;
}

}  // namespace

int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

RotatingFile::RotatingFile(PathMaker path_maker, const RotationOptions& options,
                           std::span<const std::byte> preamble)
    : path_maker_(std::move(path_maker)),
      options_(options),
      preamble_(preamble.begin(), preamble.end()),
      // O_DIRECT through io_uring: kUringDepth writes of buffer_bytes each in flight (one
      // 1 MiB write at a time reached 1.2 GB/s on the VM's disk, four in flight 2.7 GB/s,
      // fio's figure: BENCHMARKS.md). DMA reads the chunks: no cache to keep them small for.
      staging_(options.buffer_bytes *
               (options.output.direct && options.io_uring ? kUringDepth : 1)),
      backoff_(options.retry.first),
      seq_(options.first_seq),
      targets_(options.targets) {
  if (options_.clock == nullptr) options_.clock = monotonic_ns;
  if (!options_.names) targets_.reset();
  options_.output.keep_cut = options_.output.keep_cut || spread();
}

RotatingFile::~RotatingFile() {
  (void)close();
}

Status RotatingFile::write(std::span<const Piece> pieces, RecordKind kind) {
  const uint64_t index = next_index_++;
  if (closed_) {
    ++stats_.frames_dropped;
    return {};
  }
  uint64_t n = 0;
  for (const Piece& p : pieces)
    n += p.size;

  Status first_error;
  if (!started_) {
    started_ = true;
    first_error = start_file(seq_);
  } else if (!file_.is_open()) {
    if (retry_due()) {
      ++stats_.retries;
      first_error = start_file(++seq_);
    }
  } else if (virtual_records_ > 0 &&
             (rotate_requested_ ||
              (options_.max_bytes > 0 && virtual_bytes_ + n > options_.max_bytes) ||
              (spread() && !targets_->in_rotation_relaxed(target_)))) {
    rotate_requested_ = false;
    first_error = finish_file(index, true);
    // A failed close may have moved its records to a new file on another target already.
    if (first_error.ok() && !file_.is_open()) first_error = start_file(++seq_);
  }

  const uint64_t fills = kind == RecordKind::fill ? 1 : 0;
  if (!file_.is_open()) {
    lose(index, 1, fills);
    return first_error;
  }
  Status appended = append(pieces, 1, fills, index);
  if (first_error.ok()) first_error = std::move(appended);
  return first_error;
}

// `records` records (`fills` of them fill frames, the first with frame index `first`) as one
// run of pieces. On a failure the target's error either spills (several targets: the cut
// records and these go to a new file on another target) or is recorded, and these records
// and the cut ones are counted lost.
Status RotatingFile::append(std::span<const Piece> pieces, uint64_t records, uint64_t fills,
                            uint64_t first, unsigned depth) {
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  const uint64_t fills_before = file_.fill_records();
  if (records_before == 0 && !files_.empty()) files_.back().first_index = first;
  uint64_t n = 0;
  for (const Piece& p : pieces) {
    n += p.size;
    Status s = p.data == nullptr ? file_.append_zeros(p.size)
               : p.borrowed      ? file_.append_borrowed({p.data, p.size})
                                 : file_.append({p.data, p.size});
    if (s.ok()) continue;
    // The file cut itself back to its last whole record on disk.
    uint64_t cut = records_before - file_.records();
    uint64_t cut_fills = fills_before - file_.fill_records();
    stats_.bytes_written -= bytes_before - file_.size();
    stats_.frames_written -= cut;
    stats_.fill_frames -= cut_fills;
    const uint64_t cut_first = first >= cut ? first - cut : 0;
    if (spill(s, cut, cut_fills, cut_first, depth)) {
      return append(pieces, records, fills, first, depth + 1);
    }
    lose(cut_first, cut, cut_fills);
    lose(first, records, fills);
    return s;
  }
  virtual_bytes_ += n;
  virtual_records_ += records;
  if (records == 1) {
    file_.end_record(fills == 1);
  } else {
    file_.end_records(records, fills);
  }
  stats_.bytes_written += file_.size() - bytes_before;
  stats_.frames_written += records;
  stats_.fill_frames += fills;
  return {};
}

// After file_ failed with `s` (and cut `cut` whole records, the first with index `cut_first`):
// true when the cut records now sit in a new file on another target (the caller then writes
// its own records there); false when the error stays an error (recorded, writer suspended).
// When no other target could take them, `s` becomes that error: with one target failed and
// the others full the run goes on (ENOSPC), it is not storage loss.
bool RotatingFile::spill(Status& s, uint64_t& cut, uint64_t& cut_fills, uint64_t cut_first,
                         unsigned depth) {
  OutputFile::Cut moved = file_.take_cut();
  sync_current();
  files_.back().open = false;
  files_.back().failed = true;
  const bool progressed = file_.records() > 0;
  const std::size_t from = target_;
  release_target(file_.size());
  forget_if_empty();
  const bool can_spill = spread() && target_fault(s.code()) && (cut == 0 || !moved.bytes.empty()) &&
                         depth <= targets_->size();
  if (!can_spill) {
    record_error(s);
    suspend(progressed);
    return false;
  }
  targets_->take_out(from, s.code(), s.message());
  ++stats_.spills;
  stats_.last_error = s.message();
  if (Status o = open_on_target(++seq_); !o) {
    record_error(o);
    suspend(progressed);
    s = std::move(o);
    return false;
  }
  if (cut == 0) return true;
  Status moved_status = append_moved(moved, cut_first, depth + 1);
  if (moved_status.ok()) return true;
  // append_moved counted the moved records lost itself (no target could take them).
  cut = cut_fills = 0;
  s = std::move(moved_status);
  return false;
}

// The cut records, the first with index `first`, appended to the new file run by run between
// the old file's record ends, so that the new file knows them as record ends too. On a failure
// the failing run and those before it were counted by append(); the runs after it are lost.
Status RotatingFile::append_moved(const OutputFile::Cut& moved, uint64_t first, unsigned depth) {
  uint64_t from = 0;
  for (std::size_t i = 0; i < moved.bounds.size(); ++i) {
    const OutputFile::CutBound& b = moved.bounds[i];
    const Piece piece{moved.bytes.data() + from, b.end - from};
    Status st = append(std::span<const Piece>(&piece, 1), b.records, b.fills, first, depth);
    first += b.records;
    if (st.ok()) {
      from = b.end;
      continue;
    }
    uint64_t rest = 0, rest_fills = 0;
    for (std::size_t j = i + 1; j < moved.bounds.size(); ++j) {
      rest += moved.bounds[j].records;
      rest_fills += moved.bounds[j].fills;
    }
    lose(first, rest, rest_fills);
    return st;
  }
  return {};
}

Status RotatingFile::start_file(uint64_t seq) {
  if (targets_) {
    Status s = open_on_target(seq);
    if (!s) {
      record_error(s);
      suspend(false);
    }
    return s;
  }
  std::filesystem::path path;
  Status s = path_maker_(seq, path);
  if (s) s = open_path(path, seq, 0);
  if (!s) {
    record_error(s);
    suspend(false);
  }
  return s;
}

// Places file `seq` on a target in rotation; an open the target refuses (full, failing) takes
// it out and the next one is tried. Not recorded: the caller decides.
Status RotatingFile::open_on_target(uint64_t seq) {
  Status last;
  for (std::size_t tries = 0; tries <= targets_->size(); ++tries) {
    // A first file reserves nothing: it may stay small (codifhdr next to raw); a writer that
    // rotated fills its files, so later ones reserve the rotation size.
    const uint64_t expected = stats_.files_opened == 0 ? 0 : expected_size(options_);
    const auto t = targets_->place(expected);
    if (!t) {
      const bool full = targets_->any_full();
      return Status::error(
          full ? ENOSPC : EIO,
          "no output target in rotation (" +
              std::string(full ? "every target full or failed" : "every target failed") + ")" +
              (last.ok() ? "" : "; last error: " + last.message()),
          last.path());
    }
    target_ = *t;
    expected_ = expected;
    placed_ = true;
    // A target whose directories changed (unmounted, removed, replaced) is lost, checked at
    // every file placed: no file goes onto whatever its path names now. The only target: its
    // run is lost (the daemon stops it).
    if (std::string why = targets_->identity_problem(*t); !why.empty()) {
      release_target(0);
      Status gone = Status::error(ENOENT, why, targets_->directory(*t));
      if (!spread()) return gone;
      targets_->lose(*t, why);
      last = std::move(gone);
      continue;
    }
    const std::string name = options_.names(seq);
    UniqueFd dir;
    std::string leaf;
    Status s = targets_->open_parent(*t, name, dir, leaf);
    if (s) s = open_path(targets_->directory(*t) / name, seq, *t, dir.get(), leaf);
    if (s) return s;
    release_target(0);
    if (!spread() || !target_fault(s.code())) return s;
    targets_->take_out(*t, s.code(), s.message());
    ++stats_.spills;
    last = std::move(s);
  }
  return last;
}

// One io_uring per writer, made at its first O_DIRECT file and kept across rotations.
UringQueue* RotatingFile::queue_for_direct() {
  if (!options_.output.direct || !options_.io_uring) return nullptr;
  if (!queue_ && io_engine_.empty()) {
    queue_ = UringQueue::create(kUringDepth, io_engine_);
    if (queue_) io_engine_ = "io_uring";
  }
  return queue_.get();
}

Status RotatingFile::open_path(const std::filesystem::path& path, uint64_t seq, std::size_t target,
                               int dir, const std::string& leaf) {
  virtual_bytes_ = preamble_.size();
  virtual_records_ = 0;
  unlink_reported_ = false;
  rotate_requested_ = false;  // a SIGHUP while no file was open is served by this new file
  OutputOptions out = options_.output;
  if (targets_) {
    out.on_write = [targets = targets_, target](uint64_t bytes, uint64_t ns) {
      targets->wrote(target, bytes, ns);
    };
    out.backlog = targets_->backlog(target);
  }
  out.preallocate = options_.preallocate ? options_.max_bytes : 0;
  if (Status s = dir >= 0 ? file_.open_at(dir, leaf, path, out, staging_.span(), queue_for_direct())
                          : file_.open(path, out, staging_.span(), queue_for_direct());
      !s) {
    return s;
  }
  if (targets_) targets_->file_opened(target);
  note_file_system(target);
  suspended_ = false;
  ++stats_.files_opened;
  FileRecord rec;
  rec.path = path;
  rec.seq = seq;
  rec.direct = file_.direct();
  rec.open = true;
  rec.target = target;
  rec.dev = file_.device();
  rec.ino = file_.inode();
  files_.push_back(std::move(rec));
  // The staging buffer is empty and at least one block long: the preamble cannot fail here.
  (void)file_.append(preamble_);
  file_.end_preamble();
  stats_.bytes_written += preamble_.size();
  sync_current();
  return {};
}

// The open file's reservation on its target becomes its real size.
void RotatingFile::release_target(uint64_t bytes) noexcept {
  if (!placed_ || !targets_) return;
  placed_ = false;
  targets_->file_closed(target_, expected_, bytes);
}

// `index`: the frame index of the record about to be written (the cut ones precede it).
Status RotatingFile::finish_file(uint64_t index, bool rotating) {
  if (!file_.is_open()) return {};
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  const uint64_t fills_before = file_.fill_records();
  Status s = file_.close(!(rotating && defer_sync()));
  if (s) {
    sync_current();
    files_.back().open = false;
    release_target(file_.size());
    backoff_ = options_.retry.first;  // a whole file reached the disk
    return s;
  }
  return cut_failed(std::move(s), index, bytes_before, records_before, fills_before);
}

Status RotatingFile::flush_borrowed() {
  if (!file_.is_open()) return {};
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  const uint64_t fills_before = file_.fill_records();
  Status s = file_.flush_borrowed();
  if (s) return s;
  return cut_failed(std::move(s), next_index_, bytes_before, records_before, fills_before);
}

Status RotatingFile::flush() {
  if (!file_.is_open()) return {};
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  const uint64_t fills_before = file_.fill_records();
  Status s = file_.flush();
  if (s) return s;
  return cut_failed(std::move(s), next_index_, bytes_before, records_before, fills_before);
}

// The file failed outside a record (flush, close) and cut itself back to its last whole record
// on disk: the cut records (just before `index`) spill to another target or are counted lost.
Status RotatingFile::cut_failed(Status s, uint64_t index, uint64_t bytes_before,
                                uint64_t records_before, uint64_t fills_before) {
  uint64_t cut = records_before - file_.records();
  uint64_t cut_fills = fills_before - file_.fill_records();
  stats_.bytes_written -= bytes_before - file_.size();
  stats_.frames_written -= cut;
  stats_.fill_frames -= cut_fills;
  const uint64_t cut_first = index >= cut ? index - cut : 0;
  if (spill(s, cut, cut_fills, cut_first, 0)) return {};
  lose(cut_first, cut, cut_fills);
  return s;
}

Status RotatingFile::close() {
  closed_ = true;
  Status s = finish_file(next_index_);
  // A failed close spills its records into a file on another target: close that one too.
  for (std::size_t i = 0; s.ok() && file_.is_open() && i <= (targets_ ? targets_->size() : 0);
       ++i) {
    s = finish_file(next_index_);
  }
  Status synced = sync_file_systems();
  return s ? synced : s;
}

// A directory of each file system files are opened on (without fsync_rotated), for syncfs at
// close(): opened with the first file there, so that syncfs reports every write-back error
// from then on (Linux >= 5.8 keeps them per file system and reports those since the open).
// When none can be opened, that file system's files are fsynced as they close.
void RotatingFile::note_file_system(std::size_t target) noexcept {
  if (options_.fsync_rotated || !options_.output.fsync_on_close) return;
  const dev_t dev = file_.device();
  try {
    for (Unsynced& u : unsynced_) {
      if (u.dev != dev) continue;
      if (std::find(u.targets.begin(), u.targets.end(), target) == u.targets.end())
        u.targets.push_back(target);
      return;
    }
    Unsynced u{dev, false, file_.path().parent_path(), {}, {target}};
    u.fd.reset(::open(u.directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (u.fd.get() >= 0) unsynced_.push_back(std::move(u));
  } catch (const std::exception&) {
    // no directory kept: the file is fsynced at its close
  }
}

// After lost files were dropped: a lost target with no listed file left needs no sync, and a
// file system none of whose targets needs one is let go. Its directory held open would keep a
// lazily unmounted file system (umount -l) alive until the stop, and its syncfs there could
// only add an error to the loss already counted.
void RotatingFile::forget_lost_file_systems() noexcept {
  const auto needed = [this](std::size_t target) {
    if (!targets_->lost(target)) return true;
    return std::any_of(files_.begin(), files_.end(),
                       [target](const FileRecord& f) { return f.target == target; });
  };
  for (Unsynced& u : unsynced_)
    std::erase_if(u.targets, [&](std::size_t t) { return !needed(t); });
  std::erase_if(unsynced_, [](const Unsynced& u) { return u.targets.empty(); });
}

// Whether the open file may close without fsync; if so its file system is synced at close().
bool RotatingFile::defer_sync() noexcept {
  for (Unsynced& u : unsynced_) {
    if (u.dev == file_.device()) return u.deferred = true;
  }
  return false;
}

std::size_t RotatingFile::unsynced_file_systems() const noexcept {
  return static_cast<std::size_t>(std::count_if(unsynced_.begin(), unsynced_.end(),
                                                [](const Unsynced& u) { return u.deferred; }));
}

// A failure is the run's write error, as a failed fsync at close would be: the rotated files
// are listed with their sizes, but the disk did not confirm them.
Status RotatingFile::sync_file_systems() {
  Status first;
  for (Unsynced& u : unsynced_) {
    if (!u.deferred || ::syncfs(u.fd.get()) == 0) continue;
    Status s = sys_error(errno, "syncfs (files closed by rotation) under", u.directory);
    record_error(s);
    if (first) first = std::move(s);
  }
  unsynced_.clear();
  return first;
}

Status RotatingFile::check_storage() {
  if (!spread()) return check_unlinked();
  // Several targets: a deleted file is its target's storage lost; the epoch check below then
  // finds it (and whatever else went with the target) and counts it.
  if (file_.is_open() && !unlink_reported_ && file_.unlinked()) {
    unlink_reported_ = true;
    targets_->lose(target_, "file " + file_.path().string() + " was deleted while being written");
  }
  const uint64_t epoch = targets_->loss_epoch();
  if (epoch == seen_epoch_) return {};
  seen_epoch_ = epoch;
  return drop_lost_files();
}

// One directory: the run stops on a deleted file (the daemon's storage loss), the file stays
// listed for what it held when the run stopped.
Status RotatingFile::check_unlinked() {
  if (!file_.is_open() || unlink_reported_ || !file_.unlinked()) return {};
  unlink_reported_ = true;
  Status s = Status::error(ENOENT,
                           "file " + file_.path().string() +
                               " was deleted while being written (its data is lost with it)",
                           file_.path());
  record_error(s);
  return s;
}

// The files of this writer on lost targets that their path no longer names (removed, or on a
// file system no longer mounted there): their records are lost with reason storage_lost. A
// file still there (a target lost for a reason that did not take it) stays listed.
Status RotatingFile::drop_lost_files() {
  if (file_.is_open()) sync_current();
  std::size_t n = 0;
  uint64_t records = 0;
  std::filesystem::path first;
  std::string why;
  for (std::size_t i = 0; i < files_.size();) {
    const FileRecord& f = files_[i];
    if (!targets_->lost(f.target) || still_there(f)) {
      ++i;
      continue;
    }
    if (n++ == 0) {
      first = f.path;
      why = targets_->reason(f.target);
    }
    records += f.records;
    drop_file(i, why);
  }
  if (n == 0) return {};
  forget_lost_file_systems();
  // The target's reason reads "storage lost: <what happened>"; the daemon says the first part.
  constexpr std::string_view kPrefix = "storage lost: ";
  std::string_view what = why;
  if (what.substr(0, kPrefix.size()) == kPrefix) what.remove_prefix(kPrefix.size());
  Status s = Status::error(
      ENOENT,
      fmt::format("{} file(s) written to a lost output target are gone with it ({}), {} records "
                  "lost (storage_lost); the first: {}",
                  n, what, records, first.string()),
      first);
  record_error(s);
  return s;
}

// files_[i] leaves the list for lost_files_; an open one is closed (its data goes with it) and
// the next record opens a file on another target.
void RotatingFile::drop_file(std::size_t i, const std::string& why) {
  FileRecord f = std::move(files_[i]);
  files_.erase(files_.begin() + static_cast<std::ptrdiff_t>(i));
  if (f.open) {
    (void)file_.close();
    release_target(0);
    f.open = false;
  }
  stats_.bytes_written -= std::min(stats_.bytes_written, f.bytes);
  stats_.frames_written -= std::min(stats_.frames_written, f.records);
  stats_.fill_frames -= std::min(stats_.fill_frames, f.fills);
  lose_to(stats_.storage_loss, f.first_index, f.records, f.fills);
  f.lost = why;
  lost_files_.push_back(std::move(f));
}

const std::vector<FileRecord>& RotatingFile::files() {
  if (file_.is_open()) sync_current();
  return files_;
}

void RotatingFile::record_error(const Status& s) {
  ++stats_.write_errors;
  if (is_storage_loss(s.code())) ++stats_.storage_errors;
  stats_.last_error = s.message();
}

// Waits before the next file: a full disk is retried at most every options_.retry.max, not for
// every record, and never by blocking the caller.
void RotatingFile::suspend(bool progressed) {
  if (progressed) backoff_ = options_.retry.first;
  suspended_ = true;
  retry_at_ns_ = options_.clock() + backoff_.count();
  backoff_ = std::min(backoff_ * 2, options_.retry.max);
}

bool RotatingFile::retry_due() {
  return !suspended_ || options_.clock() >= retry_at_ns_;
}

void RotatingFile::lose(uint64_t first, uint64_t count, uint64_t fills) {
  lose_to(stats_.write_loss, first, count, fills);
}

void RotatingFile::lose_to(WriteLoss& l, uint64_t first, uint64_t count, uint64_t fills) {
  if (count == 0) return;
  l.frames += count - fills;
  l.fills += fills;
  stats_.frames_dropped += count;
  if (!l.gaps.empty() && l.gaps.back().first + l.gaps.back().second == first) {
    l.gaps.back().second += count;
  } else if (l.gaps.size() < options_.max_gaps_listed) {
    l.gaps.emplace_back(first, count);
  } else {
    ++l.gaps_not_listed;
  }
}

void RotatingFile::forget_if_empty() {
  // On a full disk every stream retries after each back-off; without this each retry would
  // leave an empty (or header-only) file behind.
  if (files_.empty() || files_.back().records != 0) return;
  std::error_code ec;
  std::filesystem::remove(files_.back().path, ec);
  if (ec) return;  // still listed, with its true size
  stats_.bytes_written -= files_.back().bytes;
  files_.pop_back();
}

void RotatingFile::sync_current() noexcept {
  if (files_.empty()) return;
  files_.back().bytes = file_.size();
  files_.back().records = file_.records();
  files_.back().fills = file_.fill_records();
}

}  // namespace rocecap::writers
