// Byte-exact comparison of a stream's raw or codifhdr files with the frames the generator
// built: the files of one stream and format, concatenated in order, must equal the
// time-aligned sequence from the first to the last placed frame index, with fill frames (the
// expected header with the invalid bit set, zero data) for the missing ones. Reads in chunks.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tools/lib/gen_frame.hpp"
#include "tools/lib/verify_model.hpp"

namespace rocecap::tools {

struct SequenceSpec {
  const FrameBuilder* frames = nullptr;
  uint32_t antenna = 0;
  const StreamExpectation* expect = nullptr;
  bool headers = true;    // 64-byte CODIF header per frame
  bool data = true;       // the data array per frame
  bool fill_gaps = true;  // missing frames written as fill frames (else left out)
  // [first index, count] of the frames the manifest counts lost to write errors (its
  // write_error gaps, in order): in no file (with several targets, once no target had room).
  std::vector<std::pair<uint64_t, uint64_t>> unwritten;
  // The stream's group in the generator's pulse (FrameBuilder::pulse_group): its payload
  // carries the pulse's samples.
  uint32_t pulse_group = kNoPulseGroup;
};

struct ListedFile {
  std::string name;  // as the manifest lists it (for reports)
  std::filesystem::path path;
};

// The name of the header field(s) that byte `offset` (0..63) of a header in `layout` holds,
// narrowed to the bits set in `diff` when non-zero, e.g. "invalid" or "frame".
std::string header_field_at(capture::codif::Layout layout, std::size_t offset, uint8_t diff);

// Empty when the files hold exactly the expected bytes; else the first difference: file,
// offset in that file, frame index and header field or data offset, or a short/long end.
std::string compare_sequence(const SequenceSpec& spec, const std::vector<ListedFile>& files);

}  // namespace rocecap::tools
