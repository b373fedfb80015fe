#include <array>
#include <string>

#include "tools/lib/verify_files.hpp"

namespace rocecap::tools {
namespace {

struct Field {
  uint8_t word, lo, hi;  // bits lo..hi of 64-bit word `word`
  const char* name;
};

// doc/codif.md's two layouts.
constexpr std::array kV3 = {
    Field{0, 0, 31, "frame"},
    Field{0, 32, 63, "seconds"},
    Field{1, 0, 7, "epoch"},
    Field{1, 8, 15, "nbits"},
    Field{1, 16, 16, "atypical"},
    Field{1, 17, 17, "invalid"},
    Field{1, 18, 18, "complex"},
    Field{1, 19, 19, "cal"},
    Field{1, 20, 23, "representation"},
    Field{1, 24, 28, "version"},
    Field{1, 29, 31, "protocol"},
    Field{1, 48, 63, "period"},
    Field{2, 0, 15, "thread_id"},
    Field{2, 16, 31, "group_id"},
    Field{2, 32, 47, "secondary_id"},
    Field{2, 48, 63, "station_id"},
    Field{3, 0, 15, "nchan"},
    Field{3, 16, 31, "block_length"},
    Field{3, 32, 63, "data_length"},
    Field{4, 0, 63, "total_samples"},
    Field{5, 0, 31, "sync"},
    Field{5, 32, 63, "metadata_id"},
    Field{6, 0, 63, "metadata"},
    Field{7, 0, 63, "metadata"},
};
constexpr std::array kV1 = {
    Field{0, 0, 31, "frame"},      Field{0, 32, 61, "seconds"},
    Field{0, 62, 62, "complex"},   Field{0, 63, 63, "invalid"},
    Field{1, 0, 15, "station_id"}, Field{1, 22, 25, "representation"},
    Field{1, 26, 31, "epoch"},     Field{1, 32, 55, "data_length"},
    Field{1, 56, 60, "nbits"},     Field{1, 61, 63, "version"},
    Field{2, 0, 15, "group_id"},   Field{2, 16, 31, "thread_id"},
    Field{2, 32, 47, "nchan"},     Field{2, 48, 63, "block_length"},
    Field{3, 32, 47, "period"},    Field{4, 0, 63, "total_samples"},
    Field{5, 32, 63, "sync"},
};

template <std::size_t N>
std::string names_at(const std::array<Field, N>& fields, std::size_t offset, uint8_t diff) {
  std::string out;
  const unsigned word = static_cast<unsigned>(offset / 8);
  for (unsigned bit = 0; bit < 8; ++bit) {
    if (diff != 0 && ((diff >> bit) & 1u) == 0) continue;
    const unsigned b = static_cast<unsigned>(offset % 8) * 8 + bit;  // little-endian word
    const char* name = "unused bits";
    for (const Field& f : fields) {
      if (f.word == word && f.lo <= b && b <= f.hi) name = f.name;
    }
    if (out.find(name) == std::string::npos) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

}  // namespace

std::string header_field_at(capture::codif::Layout layout, std::size_t offset, uint8_t diff) {
  if (offset >= capture::codif::kHeaderBytes) return "beyond the header";
  return layout == capture::codif::Layout::v1 ? names_at(kV1, offset, diff)
                                              : names_at(kV3, offset, diff);
}

}  // namespace rocecap::tools
