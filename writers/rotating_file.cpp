#include "writers/rotating_file.hpp"

#include <utility>

namespace rocecap::writers {

RotatingFile::RotatingFile(PathMaker path_maker, const RotationOptions& options,
                           std::span<const std::byte> preamble)
    : path_maker_(std::move(path_maker)),
      options_(options),
      preamble_(preamble.begin(), preamble.end()),
      staging_(options.buffer_bytes),
      seq_(options.first_seq) {}

RotatingFile::~RotatingFile() {
  (void)close();
}

Status RotatingFile::write(std::span<const Piece> pieces, bool* written) {
  if (written != nullptr) *written = false;
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
  } else if (virtual_records_ > 0 &&
             (rotate_requested_ ||
              (options_.max_bytes > 0 && virtual_bytes_ + n > options_.max_bytes))) {
    rotate_requested_ = false;
    first_error = finish_file();
    Status opened = start_file(++seq_);
    if (first_error.ok()) first_error = std::move(opened);
  }
  virtual_bytes_ += n;
  ++virtual_records_;

  if (!file_.is_open()) {
    ++stats_.frames_dropped;
    return first_error;
  }
  Status appended = append(pieces);
  if (written != nullptr) *written = appended.ok();
  if (first_error.ok()) first_error = std::move(appended);
  return first_error;
}

Status RotatingFile::append(std::span<const Piece> pieces) {
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  for (const Piece& p : pieces) {
    Status s = p.data != nullptr ? file_.append({p.data, p.size}) : file_.append_zeros(p.size);
    if (!s) {
      // The file cut itself back to its last whole record on disk; those cut records are lost.
      const uint64_t lost_records = records_before - file_.records();
      stats_.bytes_written -= bytes_before - file_.size();
      stats_.frames_written -= lost_records;
      stats_.frames_dropped += lost_records + 1;
      record_error(s);
      sync_current();
      files_.back().open = false;
      files_.back().failed = true;
      forget_if_empty();
      return s;
    }
  }
  file_.end_record();
  stats_.bytes_written += file_.size() - bytes_before;
  ++stats_.frames_written;
  return {};
}

Status RotatingFile::start_file(uint64_t seq) {
  virtual_bytes_ = preamble_.size();
  virtual_records_ = 0;
  std::filesystem::path path;
  if (Status s = path_maker_(seq, path); !s) {
    record_error(s);
    return s;
  }
  if (Status s = file_.open(path, options_.output, staging_.span()); !s) {
    record_error(s);
    return s;
  }
  ++stats_.files_opened;
  files_.push_back(FileRecord{path, seq, 0, 0, file_.direct(), true, false});
  // The staging buffer is empty and at least one block long: the preamble cannot fail here.
  (void)file_.append(preamble_);
  file_.end_preamble();
  stats_.bytes_written += preamble_.size();
  sync_current();
  return {};
}

Status RotatingFile::finish_file() {
  if (!file_.is_open()) return {};
  const uint64_t bytes_before = file_.size();
  const uint64_t records_before = file_.records();
  Status s = file_.close();
  sync_current();
  files_.back().open = false;
  if (!s) {
    const uint64_t lost_records = records_before - file_.records();
    stats_.bytes_written -= bytes_before - file_.size();
    stats_.frames_written -= lost_records;
    stats_.frames_dropped += lost_records;
    files_.back().failed = true;
    record_error(s);
    forget_if_empty();
  }
  return s;
}

Status RotatingFile::close() {
  closed_ = true;
  return finish_file();
}

const std::vector<FileRecord>& RotatingFile::files() {
  if (file_.is_open()) sync_current();
  return files_;
}

void RotatingFile::record_error(const Status& s) {
  ++stats_.write_errors;
  stats_.last_error = s.message();
}

void RotatingFile::forget_if_empty() {
  // On a full disk every stream retries at each rotation point; without this each retry
  // would leave an empty (or header-only) file behind.
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
