// The files of one stream's extract: recorded frames copied as they are in the recording
// (received frames and the recording's own fill frames), fill frames made for what the
// recording lacks, through the same writers a triggered dump uses (writers/dump_writer.hpp), so
// the bytes are a dump's. Counts and gap runs (with why) go to a StreamDumpResult.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "daemon/lib/dumps/stream_clock.hpp"
#include "daemon/lib/extract/frame_file.hpp"
#include "writers/codif_header_writer.hpp"
#include "writers/dump_writer.hpp"
#include "writers/raw_writer.hpp"
#include "writers/vdif_header_writer.hpp"

namespace rocecap::daemon {

class ExtractSink {
 public:
  // `files`: absolute paths (empty: that format is not written); `model`: any frame of the
  // stream, the template of made fill frames; `vdif`: a VDIF stream's.
  ExtractSink(const writers::DumpFiles& files, const RecordedFrame& model, bool vdif);

  // A frame read from the recording (`bytes`: the whole frame).
  void frame(const RecordedFrame& f, std::span<const std::byte> bytes);
  // `count` fill frames from `index` on, for frames the recording lacks, and why.
  void fill(uint64_t index, uint64_t count, const std::string& why);
  // Closes the files; the result is complete after this.
  void close();

  writers::StreamDumpResult& result() noexcept { return out_; }
  const std::vector<std::string>& gap_reasons() const noexcept { return reasons_; }

 private:
  void gap(uint64_t index, uint64_t count, const std::string& why);
  void check(const writers::Status& s);

  RecordedFrame model_;
  bool vdif_;
  StreamClock clock_;
  writers::StreamDumpResult out_;
  std::vector<std::string> reasons_;  // per out_.gaps entry
  std::optional<writers::RawWriter> raw_;
  std::optional<writers::CodifHeaderWriter> hdr_;
  std::optional<writers::VdifHeaderWriter> vhdr_;
};

}  // namespace rocecap::daemon
