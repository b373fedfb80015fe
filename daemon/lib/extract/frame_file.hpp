// One recorded raw file of a stream, read frame by frame (doc/dumps.md, "Extracting from a
// recording"). The raw writer writes a stream's frames back to back in index order, fill frames
// in the gaps, so frame k of a file lies at byte k x frame_bytes and its index is normally the
// file's first index + k: a seek lands by arithmetic and one header read confirms it. Where it
// does not (a resynchronisation jumped the index inside the file, a write error cut records
// out), the file is bisected on its headers, which still rise through the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "capture/codif/header.hpp"
#include "capture/stream_pipeline.hpp"
#include "capture/vdif/header.hpp"
#include "writers/unique_fd.hpp"

namespace rocecap::daemon {

// A problem with the recording or the request: the message names the file or the field.
class ExtractError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How a stream's frames are read: its format, CODIF sync words, VDIF rate.
struct FrameFormat {
  capture::StreamFormat format = capture::StreamFormat::codif;
  capture::codif::SyncSet syncs = capture::codif::SyncSet::defaults();
  capture::vdif::Rate rate;
};

// One frame's header as read from a file.
struct RecordedFrame {
  uint64_t index = 0;        // absolute frame index (the sequencer's)
  uint64_t frame_bytes = 0;  // header + data
  std::size_t header_bytes = 0;
  bool invalid = false;
  capture::codif::Header h;  // CODIF, or a VDIF frame in the CODIF model (its clock)
  capture::codif::Timing t;
  capture::vdif::Header vh;  // VDIF only
  capture::vdif::Timing vt;
};

// The frame at the start of `bytes` (the whole frame, or at least its header), checked against
// `frame_bytes` (0: the length its header gives); nullopt when it is not a frame of `format`.
std::optional<RecordedFrame> decode_recorded(const FrameFormat& format,
                                             std::span<const std::byte> bytes,
                                             uint64_t frame_bytes = 0);

// A recorded fill frame: the invalid bit set and an all-zero data array (how the raw writer
// fills a lost frame). A frame the instrument itself marked invalid with zero data reads as one.
bool is_fill_frame(const RecordedFrame& f, std::span<const std::byte> frame) noexcept;

class FrameFile {
 public:
  // Opens `path` and reads its first and last frames; throws ExtractError naming the file.
  FrameFile(std::filesystem::path path, const FrameFormat& format);

  const std::filesystem::path& path() const noexcept { return path_; }
  const RecordedFrame& first() const noexcept { return first_; }
  uint64_t last_index() const noexcept { return last_index_; }
  uint64_t frames() const noexcept { return frames_; }  // whole frames in the file
  uint64_t frame_bytes() const noexcept { return first_.frame_bytes; }
  uint64_t trailing_bytes() const noexcept { return trailing_; }  // a cut last frame, not read

  // The header of frame k (k < frames()); nullopt when it is not a frame of the stream.
  std::optional<RecordedFrame> at(uint64_t k) const;
  // The first k whose index is >= `index` (frames() when none): arithmetic, then a bisection
  // only where the landing frame disagrees. `reads`: header reads it took (benchmarks, tests).
  uint64_t seek(uint64_t index, uint64_t* reads = nullptr) const;
  // Frames [k, k + n) into `out` (n x frame_bytes()); throws ExtractError on a read error.
  void read(uint64_t k, uint64_t n, std::span<std::byte> out) const;

 private:
  std::filesystem::path path_;
  FrameFormat format_;
  writers::UniqueFd fd_;
  RecordedFrame first_;
  uint64_t frames_ = 0, trailing_ = 0, last_index_ = 0;
};

}  // namespace rocecap::daemon
