#include "writers/codif_header_writer.hpp"

#include <array>
#include <utility>

#include "writers/fill.hpp"

namespace rocecap::writers {

CodifHeaderWriter::CodifHeaderWriter(PathMaker path_maker, const RotationOptions& rotation)
    : out_(std::move(path_maker), rotation) {}

Status CodifHeaderWriter::write_frame(
    std::span<const std::byte, capture::codif::kHeaderBytes> header) {
  const std::array<Piece, 1> pieces{bytes_piece(header)};
  return out_.write(pieces);
}

Status CodifHeaderWriter::write_fill(const capture::codif::Header& first_missing,
                                     const capture::codif::Timing& timing, uint64_t count) {
  Status first_error;
  std::array<std::byte, capture::codif::kHeaderBytes> header{};
  for (uint64_t i = 0; i < count; ++i) {
    capture::codif::encode(fill_header(first_missing, timing, i), header);
    const std::array<Piece, 1> pieces{bytes_piece(header)};
    Status s = out_.write(pieces, RecordKind::fill);
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  }
  return first_error;
}

}  // namespace rocecap::writers
