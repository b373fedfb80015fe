#include "tools/lib/verify_files.hpp"

#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <sstream>
#include <vector>

namespace rocecap::tools {
namespace {

constexpr std::size_t kChunk = std::size_t{4} << 20;

std::string hex_byte(std::byte b) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", static_cast<unsigned>(b));
  return text;
}

// Walks the expected byte sequence one frame (header and/or data) at a time.
class ExpectedSequence {
 public:
  explicit ExpectedSequence(const SequenceSpec& spec)
      : spec_(spec),
        header_bytes_(spec.headers ? capture::codif::kHeaderBytes : 0),
        data_bytes_(spec.data ? spec.frames->params().payload_bytes : 0) {
    k_ = 0;
    skip_unwritten();
    load_header();
  }

  bool done() const noexcept { return !spec_.expect->any || k_ >= spec_.expect->slots.size(); }
  uint64_t index() const noexcept { return spec_.expect->first + k_; }
  uint64_t frames_left() const noexcept {
    uint64_t n = 0;
    for (std::size_t k = k_; spec_.expect->any && k < spec_.expect->slots.size(); ++k) {
      n += spec_.fill_gaps || spec_.expect->slots[k] != Slot::missing;
    }
    return n;
  }

  // Consumes up to data.size() bytes; returns how many matched before the first difference,
  // and fills `why` at a difference.
  std::size_t match(std::span<const std::byte> data, std::string& why) {
    const std::size_t n = std::min<std::size_t>(data.size(), item_bytes() - offset_);
    std::size_t same = 0;
    if (offset_ < header_bytes_) {
      same = match_header(data.first(std::min<std::size_t>(n, header_bytes_ - offset_)), why);
    } else {
      same = match_data(data.first(n), why);
    }
    offset_ += same;
    if (offset_ == item_bytes()) next();
    return same;
  }

 private:
  std::size_t item_bytes() const noexcept { return header_bytes_ + data_bytes_; }
  Slot slot() const noexcept { return spec_.expect->slots[k_]; }

  void skip_unwritten() {
    while (!done() && ((!spec_.fill_gaps && slot() == Slot::missing) || write_error_gap()))
      ++k_;
  }
  // Whether index() lies in one of the manifest's write_error gaps (visited in order).
  bool write_error_gap() {
    const auto& gaps = spec_.unwritten;
    while (gap_ < gaps.size() && gaps[gap_].first + gaps[gap_].second <= index())
      ++gap_;
    return gap_ < gaps.size() && gaps[gap_].first <= index();
  }
  void next() {
    ++k_;
    offset_ = 0;
    skip_unwritten();
    load_header();
  }
  void load_header() {
    if (done() || header_bytes_ == 0) return;
    const Fate fate = slot() == Slot::frame ? Fate::plain : Fate::invalid;
    capture::codif::encode(spec_.frames->header(spec_.antenna, index(), fate), header_);
  }

  std::size_t match_header(std::span<const std::byte> data, std::string& why) {
    for (std::size_t j = 0; j < data.size(); ++j) {
      const std::size_t at = offset_ + j;
      if (data[j] == header_[at]) continue;
      const auto diff = static_cast<uint8_t>(data[j] ^ header_[at]);
      why = "header byte " + std::to_string(at) + " (" +
            header_field_at(spec_.frames->params().layout == "v1" ? capture::codif::Layout::v1
                                                                  : capture::codif::Layout::v3,
                            at, diff) +
            "): expected " + hex_byte(header_[at]) + ", found " + hex_byte(data[j]) +
            (slot() == Slot::missing ? " (fill frame)" : "");
      return j;
    }
    return data.size();
  }

  std::size_t match_data(std::span<const std::byte> data, std::string& why) {
    const uint64_t at = offset_ - header_bytes_;
    std::size_t j = 0;
    if (slot() == Slot::missing) {
      while (j < data.size() && data[j] == std::byte{0})
        ++j;
    } else {
      j = spec_.frames->first_payload_mismatch(spec_.pulse_group, spec_.antenna, index(), at, data);
    }
    if (j == data.size()) return j;
    std::array<std::byte, 1> want{};
    if (slot() != Slot::missing)
      spec_.frames->fill_payload(spec_.pulse_group, spec_.antenna, index(), at + j, want);
    why = "data byte " + std::to_string(at + j) + ": expected " + hex_byte(want[0]) + ", found " +
          hex_byte(data[j]) + (slot() == Slot::missing ? " (fill frame)" : "");
    return j;
  }

  const SequenceSpec& spec_;
  std::size_t header_bytes_, data_bytes_;
  std::size_t k_ = 0;       // into expect->slots
  std::size_t gap_ = 0;     // into spec_.unwritten
  std::size_t offset_ = 0;  // into the current frame's bytes
  std::array<std::byte, capture::codif::kHeaderBytes> header_{};
};

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string where(const ListedFile& f, uint64_t offset, uint64_t index) {
  return f.name + " offset " + std::to_string(offset) + ", frame index " + std::to_string(index);
}

// Compares one file; empty when it matched to its end.
std::string compare_file(const ListedFile& f, ExpectedSequence& seq, std::vector<std::byte>& buf) {
  const File file(std::fopen(f.path.c_str(), "rb"));
  if (!file) return f.name + ": cannot open: " + std::strerror(errno);
  uint64_t offset = 0;
  for (;;) {
    const std::size_t got = std::fread(buf.data(), 1, buf.size(), file.get());
    if (got == 0) {
      if (std::ferror(file.get())) return f.name + ": read error";
      return {};
    }
    std::span<const std::byte> rest(buf.data(), got);
    while (!rest.empty()) {
      if (seq.done()) {
        return f.name + " offset " + std::to_string(offset) +
               ": data past the last expected frame (index " + std::to_string(seq.index() - 1) +
               ")";
      }
      std::string why;
      const uint64_t index = seq.index();
      const std::size_t same = seq.match(rest, why);
      if (!why.empty()) return where(f, offset + same, index) + ": " + why;
      rest = rest.subspan(same);
      offset += same;
    }
  }
}

}  // namespace

std::string compare_sequence(const SequenceSpec& spec, const std::vector<ListedFile>& files) {
  ExpectedSequence seq(spec);
  std::vector<std::byte> buf(kChunk);
  for (const ListedFile& f : files) {
    if (std::string problem = compare_file(f, seq, buf); !problem.empty()) return problem;
  }
  if (!seq.done()) {
    const std::string last = files.empty() ? std::string("no files") : files.back().name;
    return last + ": ends early at frame index " + std::to_string(seq.index()) + " (" +
           std::to_string(seq.frames_left()) + " expected frames missing)";
  }
  return {};
}

}  // namespace rocecap::tools
