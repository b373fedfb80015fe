#include "writers/raw_writer.hpp"

#include <array>
#include <utility>

#include "writers/fill.hpp"
#include "writers/vdif_header_writer.hpp"

namespace rocecap::writers {

RawWriter::RawWriter(PathMaker path_maker, const RotationOptions& rotation, RawOptions options)
    : out_(std::move(path_maker), rotation), options_(options) {}

Status RawWriter::write_frame(std::span<const std::byte, capture::codif::kHeaderBytes> header,
                              std::span<const std::byte> data,
                              std::span<const std::byte> data_tail) {
  return write_record(header, data, data_tail);
}

// The header (built on the caller's stack: copied) and the data (ring slots: borrowed when the
// file gathers, written before the slots are released).
Status RawWriter::write_record(std::span<const std::byte> header, std::span<const std::byte> data,
                               std::span<const std::byte> data_tail) {
  if (options_.strip_headers) {
    const std::array<Piece, 2> pieces{borrowed_piece(data, borrow_),
                                      borrowed_piece(data_tail, borrow_)};
    return out_.write(pieces);
  }
  const std::array<Piece, 3> pieces{bytes_piece(header), borrowed_piece(data, borrow_),
                                    borrowed_piece(data_tail, borrow_)};
  return out_.write(pieces);
}

Status RawWriter::write_fill(const capture::codif::Header& first_missing,
                             const capture::codif::Timing& timing, uint64_t count) {
  const std::size_t data_bytes = first_missing.payload_bytes();
  Status first_error;
  std::array<std::byte, capture::codif::kHeaderBytes> header{};
  for (uint64_t i = 0; i < count; ++i) {
    Status s;
    if (options_.strip_headers) {
      const std::array<Piece, 1> pieces{zeros_piece(data_bytes)};
      s = out_.write(pieces, RecordKind::fill);
    } else {
      capture::codif::encode(fill_header(first_missing, timing, i), header);
      const std::array<Piece, 2> pieces{bytes_piece(header), zeros_piece(data_bytes)};
      s = out_.write(pieces, RecordKind::fill);
    }
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  }
  return first_error;
}

Status RawWriter::write_vdif_frame(std::span<const std::byte> header,
                                   std::span<const std::byte> data,
                                   std::span<const std::byte> data_tail) {
  return write_record(header, data, data_tail);
}

Status RawWriter::write_vdif_fill(const capture::vdif::Header& ref,
                                  const capture::vdif::Timing& timing, uint64_t index,
                                  uint64_t count) {
  const std::size_t data_bytes = ref.payload_bytes();
  Status first_error;
  std::array<std::byte, capture::vdif::kHeaderBytes> header{};
  for (uint64_t i = 0; i < count; ++i) {
    Status s;
    if (options_.strip_headers) {
      const std::array<Piece, 1> pieces{zeros_piece(data_bytes)};
      s = out_.write(pieces, RecordKind::fill);
    } else {
      capture::vdif::encode(vdif_fill_header(ref, timing, index + i), header);
      const std::array<Piece, 2> pieces{
          bytes_piece(std::span<const std::byte>(header).first(ref.header_bytes())),
          zeros_piece(data_bytes)};
      s = out_.write(pieces, RecordKind::fill);
    }
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  }
  return first_error;
}

}  // namespace rocecap::writers
