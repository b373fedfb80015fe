#include "writers/rotating_file.hpp"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace rocecap::writers {

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
      seq_(options.first_seq) {
  if (options_.clock == nullptr) options_.clock = monotonic_ns;
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
              (options_.max_bytes > 0 && virtual_bytes_ + n > options_.max_bytes))) {
    rotate_requested_ = false;
    first_error = finish_file(index);
    if (first_error.ok()) first_error = start_file(++seq_);
  }

  if (!file_.is_open()) {
    lose(index, 1, kind == RecordKind::fill ? 1 : 0);
    return first_error;
  }
  virtual_bytes_ += n;
  ++virtual_records_;
  Status appended = append(pieces, kind, index);
  if (first_error.ok()) first_error = std::move(appended);
  return first_error;
}

Status RotatingFile::append(std::span<const Piece> pieces, RecordKind kind, uint64_t index) {
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  const uint64_t fills_before = file_.fill_records();
  for (const Piece& p : pieces) {
    Status s = p.data == nullptr ? file_.append_zeros(p.size)
               : p.borrowed      ? file_.append_borrowed({p.data, p.size})
                                 : file_.append({p.data, p.size});
    if (!s) {
      // The file cut itself back to its last whole record on disk; those cut records are lost,
      // and so is this one.
      file_failed(s, index, bytes_before, records_before, fills_before, &kind);
      return s;
    }
  }
  file_.end_record(kind == RecordKind::fill);
  stats_.bytes_written += file_.size() - bytes_before;
  ++stats_.frames_written;
  if (kind == RecordKind::fill) ++stats_.fill_frames;
  return {};
}

// The file cut itself back to its last whole record on disk: the records cut are lost (they
// precede `index`), and so is the record being written (`current`, if any); the error is
// counted, and the next file waits for the back-off.
void RotatingFile::file_failed(const Status& s, uint64_t index, uint64_t bytes_before,
                               uint64_t records_before, uint64_t fills_before,
                               const RecordKind* current) {
  stats_.bytes_written -= bytes_before - file_.size();
  lose_cut(index, records_before - file_.records(), fills_before - file_.fill_records());
  if (current != nullptr) lose(index, 1, *current == RecordKind::fill ? 1 : 0);
  record_error(s);
  sync_current();
  files_.back().open = false;
  files_.back().failed = true;
  const bool progressed = file_.records() > 0;
  forget_if_empty();
  suspend(progressed);
}

Status RotatingFile::flush_borrowed() {
  if (!file_.is_open()) return {};
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  const uint64_t fills_before = file_.fill_records();
  Status s = file_.flush_borrowed();
  if (!s) file_failed(s, next_index_, bytes_before, records_before, fills_before);
  return s;
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

Status RotatingFile::start_file(uint64_t seq) {
  virtual_bytes_ = preamble_.size();
  virtual_records_ = 0;
  unlink_reported_ = false;
  rotate_requested_ = false;  // a SIGHUP while no file was open is served by this new file
  std::filesystem::path path;
  if (Status s = path_maker_(seq, path); !s) {
    record_error(s);
    suspend(false);
    return s;
  }
  OutputOptions output = options_.output;
  output.preallocate = options_.preallocate ? options_.max_bytes : 0;
  if (Status s = file_.open(path, output, staging_.span(), queue_for_direct()); !s) {
    record_error(s);
    suspend(false);
    return s;
  }
  suspended_ = false;
  ++stats_.files_opened;
  files_.push_back(FileRecord{path, seq, 0, 0, file_.direct(), true, false});
  // The staging buffer is empty and at least one block long: the preamble cannot fail here.
  (void)file_.append(preamble_);
  file_.end_preamble();
  stats_.bytes_written += preamble_.size();
  sync_current();
  return {};
}

// `index`: the frame index of the record about to be written (the cut ones precede it).
Status RotatingFile::finish_file(uint64_t index) {
  if (!file_.is_open()) return {};
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  const uint64_t fills_before = file_.fill_records();
  Status s = file_.close();
  sync_current();
  files_.back().open = false;
  if (!s) {
    stats_.bytes_written -= bytes_before - file_.size();
    lose_cut(index, records_before - file_.records(), fills_before - file_.fill_records());
    files_.back().failed = true;
    record_error(s);
    const bool progressed = file_.records() > 0;
    forget_if_empty();
    suspend(progressed);
  } else {
    backoff_ = options_.retry.first;  // a whole file reached the disk
  }
  return s;
}

Status RotatingFile::close() {
  closed_ = true;
  return finish_file(next_index_);
}

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

void RotatingFile::lose_cut(uint64_t index, uint64_t records, uint64_t fills) {
  stats_.frames_written -= records;
  stats_.fill_frames -= fills;
  // The cut records are the ones just before `index` in the file (contiguous indices: the file
  // is in frame order, fill frames included).
  lose(index >= records ? index - records : 0, records, fills);
}

void RotatingFile::lose(uint64_t first, uint64_t count, uint64_t fills) {
  if (count == 0) return;
  WriteLoss& l = stats_.write_loss;
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
}

}  // namespace rocecap::writers
