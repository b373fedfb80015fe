// codifhdr output of one stream: the 64-byte CODIF headers only, concatenated (codifio's .chead).
//
// Fill frames are written here too (their header is the fill header, invalid bit set), so header
// n of the .chead file describes frame n of the raw file of the same run and gaps stay visible
// to codifsum as invalid frames.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "capture/codif/header.hpp"
#include "writers/rotating_file.hpp"
#include "writers/status.hpp"
#include "writers/writer_stats.hpp"

namespace rocecap::writers {

class CodifHeaderWriter {
 public:
  CodifHeaderWriter(PathMaker path_maker, const RotationOptions& rotation);

  Status write_frame(std::span<const std::byte, capture::codif::kHeaderBytes> header);
  // As RawWriter::write_fill, headers only.
  Status write_fill(const capture::codif::Header& first_missing,
                    const capture::codif::Timing& timing, uint64_t count);

  Status close() { return out_.close(); }
  void request_rotation() noexcept { out_.request_rotation(); }
  // Frame index of the next frame or fill frame (write-error gaps are listed by index).
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

}  // namespace rocecap::writers
