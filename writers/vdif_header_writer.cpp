#include "writers/vdif_header_writer.hpp"

#include <array>
#include <utility>

namespace rocecap::writers {

VdifHeaderWriter::VdifHeaderWriter(PathMaker path_maker, const RotationOptions& rotation)
    : out_(std::move(path_maker), rotation) {}

Status VdifHeaderWriter::write_frame(std::span<const std::byte> header) {
  const std::array<Piece, 1> pieces{bytes_piece(header)};
  return out_.write(pieces);
}

Status VdifHeaderWriter::write_fill(const capture::vdif::Header& ref,
                                    const capture::vdif::Timing& timing, uint64_t index,
                                    uint64_t count) {
  Status first_error;
  std::array<std::byte, capture::vdif::kHeaderBytes> header{};
  for (uint64_t i = 0; i < count; ++i) {
    capture::vdif::encode(vdif_fill_header(ref, timing, index + i), header);
    const std::array<Piece, 1> pieces{
        bytes_piece(std::span<const std::byte>(header).first(ref.header_bytes()))};
    Status s = out_.write(pieces, RecordKind::fill);
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  }
  return first_error;
}

}  // namespace rocecap::writers
