// vdifhdr output of one stream: the VDIF headers only (32 bytes each, 16 for legacy headers),
// concatenated, the counterpart of codifhdr.
//
// Fill frames are written here too (their header is the fill header, invalid bit set), so
// header n of the file describes frame n of the raw file of the same run.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "capture/vdif/header.hpp"
#include "writers/rotating_file.hpp"
#include "writers/status.hpp"
#include "writers/writer_stats.hpp"

namespace rocecap::writers {

class VdifHeaderWriter {
 public:
  VdifHeaderWriter(PathMaker path_maker, const RotationOptions& rotation);

  // The frame's header bytes (16 or 32).
  Status write_frame(std::span<const std::byte> header);
  // `count` fill headers from `first_missing` on (invalid bit set).
  Status write_fill(const capture::vdif::Header& first_missing, const capture::vdif::Timing& timing,
                    uint64_t index, uint64_t count);

  Status close() { return out_.close(); }
  void request_rotation() noexcept { out_.request_rotation(); }
  void set_next_index(uint64_t index) noexcept { out_.set_next_index(index); }
  Status check_storage() { return out_.check_storage(); }
  // What is buffered, to the kernel (RotatingFile::flush; CaptureWriter::flush's interval).
  Status flush() { return out_.flush(); }
  const WriterStats& stats() const noexcept { return out_.stats(); }
  const std::vector<FileRecord>& files() { return out_.files(); }
  const std::vector<FileRecord>& lost_files() const noexcept { return out_.lost_files(); }

 private:
  RotatingFile out_;
};

// The header of frame `index` of the stream of `ref`, with the invalid bit set: a fill frame's.
inline capture::vdif::Header vdif_fill_header(const capture::vdif::Header& ref,
                                              const capture::vdif::Timing& timing,
                                              uint64_t index) noexcept {
  capture::vdif::Header h = capture::vdif::at_index(ref, timing, index);
  h.invalid = true;
  return h;
}

}  // namespace rocecap::writers
