// Raw output of one stream: a CODIF file, frames in time order, fill frames for gaps.
//
// With strip_headers the file holds the data arrays only (time-aligned samples; fill frames are
// zero data). The caller (the ring consumer) hands frames in sequence order and reports each gap
// with write_fill(); the writer does no sequencing of its own.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "capture/codif/header.hpp"
#include "capture/vdif/header.hpp"
#include "writers/rotating_file.hpp"
#include "writers/status.hpp"
#include "writers/writer_stats.hpp"

namespace rocecap::writers {

struct RawOptions {
  bool strip_headers = false;
};

class RawWriter {
 public:
  RawWriter(PathMaker path_maker, const RotationOptions& rotation, RawOptions options = {});

  // One received frame: its 64-byte CODIF header and its data array (the header and payload
  // slots of the split capture).
  // The data may come in two pieces (`data`, then `data_tail`): the split capture puts the
  // first bytes after the CODIF header in the header slot and the rest in the payload slot.
  Status write_frame(std::span<const std::byte, capture::codif::kHeaderBytes> header,
                     std::span<const std::byte> data, std::span<const std::byte> data_tail = {});

  // `count` fill frames: the headers of the frames from `first_missing` on (its index, then
  // +1...) with the invalid bit set, and first_missing.payload_bytes() zero bytes each.
  // The caller bounds `count` (the Sequencer resynchronises instead of filling huge jumps).
  // Returns the first error; fill frames that could not be written are counted as dropped.
  Status write_fill(const capture::codif::Header& first_missing,
                    const capture::codif::Timing& timing, uint64_t count);

  // VDIF (doc/vdif.md): a frame whose header is 16 or 32 bytes.
  Status write_vdif_frame(std::span<const std::byte> header, std::span<const std::byte> data,
                          std::span<const std::byte> data_tail = {});
  // `count` VDIF fill frames for indices `index`, `index` + 1, ...: `ref`'s header with that
  // index's seconds and frame number and the invalid bit set, then ref.payload_bytes() zeros.
  Status write_vdif_fill(const capture::vdif::Header& ref, const capture::vdif::Timing& timing,
                         uint64_t index, uint64_t count);

  Status close() { return out_.close(); }
  void request_rotation() noexcept { out_.request_rotation(); }
  // Frame index of the next frame or fill frame (write-error gaps are listed by index).
  void set_next_index(uint64_t index) noexcept { out_.set_next_index(index); }
  Status check_storage() { return out_.check_storage(); }
  // What is buffered, to the kernel (RotatingFile::flush; CaptureWriter::flush's interval).
  Status flush() { return out_.flush(); }
  // From now on the frame bytes handed to the writer (not the headers, which callers build on
  // their stack) stay valid until flush_borrowed(): a buffered file writes them from where
  // they are with writev instead of copying them (OutputFile's gather path).
  void borrow_payloads() noexcept {
    borrow_ = true;
    out_.enable_gather();
  }
  // Writes what was borrowed; call before the borrowed memory is reused.
  Status flush_borrowed() { return out_.flush_borrowed(); }
  const RotatingFile& output() const noexcept { return out_; }
  const WriterStats& stats() const noexcept { return out_.stats(); }
  const std::vector<FileRecord>& files() { return out_.files(); }
  const std::vector<FileRecord>& lost_files() const noexcept { return out_.lost_files(); }

 private:
  Status write_record(std::span<const std::byte> header, std::span<const std::byte> data,
                      std::span<const std::byte> data_tail);
  RotatingFile out_;
  RawOptions options_;
  bool borrow_ = false;
};

}  // namespace rocecap::writers
