#include "tools/lib/verify_partial.hpp"

#include <array>
#include <fstream>
#include <optional>

namespace rocecap::tools {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The absolute index of the CODIF header at `offset` of `path`, if it is one.
std::optional<uint64_t> index_at(const fs::path& path, uint64_t offset, std::size_t frame_bytes) {
  std::ifstream in(path, std::ios::binary);
  std::array<std::byte, capture::codif::kHeaderBytes> raw{};
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in.read(reinterpret_cast<char*>(raw.data()), raw.size())) return std::nullopt;
  capture::codif::Header h;
  capture::codif::Timing t;
  if (!capture::codif::decode(raw, capture::codif::SyncSet::defaults(), h) ||
      capture::codif::validate(h, frame_bytes, t) != capture::codif::Invalid::ok) {
    return std::nullopt;
  }
  return capture::codif::absolute_index(h, t);
}

struct Group {
  int attempt = 1;
  std::vector<ListedFile> files;
};

std::vector<Group> groups_by_attempt(const PartialFiles& in) {
  std::vector<Group> out;
  for (const json& f : *in.files) {
    if (f.value("format", "") != in.format) continue;
    const int attempt = f.value("attempt", 1);
    if (out.empty() || out.back().attempt != attempt) out.push_back({attempt, {}});
    const std::string name = f.value("path", "");
    out.back().files.push_back({name, in.root / name});
  }
  return out;
}

// One attempt's window: the files must be whole frames from index `first` to `last`.
void compare_window(const PartialFiles& in, const Group& g, std::vector<bool>& covered,
                    PartialVerdict& v) {
  const StreamExpectation& e = *in.spec.expect;
  const std::size_t frame = in.spec.frames->frame_bytes();
  const std::size_t stride = in.spec.data ? frame : capture::codif::kHeaderBytes;
  std::error_code ec;
  const fs::path& first_file = g.files.front().path;
  const fs::path& last_file = g.files.back().path;
  const uint64_t last_size = fs::file_size(last_file, ec);
  if (ec || last_size < stride) {
    v.problems.push_back(g.files.back().name + ": no whole frame");
    return;
  }
  for (const ListedFile& f : g.files) {
    if (fs::file_size(f.path, ec) % stride != 0) {
      v.problems.push_back(f.name + ": not a whole number of " + std::to_string(stride) +
                           "-byte frames");
      return;
    }
  }
  const auto first = index_at(first_file, 0, frame);
  const auto last = index_at(last_file, last_size - stride, frame);
  if (!first || !last || !e.any || *first < e.first || *last > e.last || *last < *first) {
    v.problems.push_back("attempt " + std::to_string(g.attempt) +
                         ": its files do not start and end with frames the generator sent");
    return;
  }
  StreamExpectation w = e;
  w.first = *first;
  w.last = *last;
  w.slots.assign(e.slots.begin() + static_cast<std::ptrdiff_t>(*first - e.first),
                 e.slots.begin() + static_cast<std::ptrdiff_t>(*last - e.first + 1));
  SequenceSpec spec = in.spec;
  spec.expect = &w;
  if (std::string p = compare_sequence(spec, g.files); !p.empty()) {
    v.problems.push_back("attempt " + std::to_string(g.attempt) + ": " + p);
    return;
  }
  for (uint64_t i = *first; i <= *last; ++i)  // windows of replayed attempts may overlap
    covered[i - e.first] = true;
  v.checked += (v.checked.empty() ? "" : ", ") + std::string("attempt ") +
               std::to_string(g.attempt) + " frames [" + std::to_string(*first) + ", " +
               std::to_string(*last) + "]";
}

}  // namespace

bool is_partial_run(const json& manifest) {
  return manifest.value("state", "") == "recovered" || manifest.value("attempt", 1) > 1 ||
         manifest.contains("recovery");
}

PartialVerdict compare_partial(const PartialFiles& in) {
  PartialVerdict v;
  const StreamExpectation& e = *in.spec.expect;
  for (const Slot s : e.slots)
    v.expected += s != Slot::missing;
  if (!in.spec.headers) {
    v.checked = std::string(in.format) +
                ": headers stripped: the files do not say which frames they hold; not compared";
    return v;
  }
  std::vector<bool> covered(e.slots.size(), false);
  for (const Group& g : groups_by_attempt(in)) {
    if (!g.files.empty()) compare_window(in, g, covered, v);
  }
  for (std::size_t k = 0; k < e.slots.size(); ++k)
    v.captured += covered[k] && e.slots[k] != Slot::missing;
  if (v.problems.empty()) {
    v.checked = std::string(in.format) + ": " +
                (v.checked.empty() ? "no files" : v.checked + " byte-identical") + "; " +
                std::to_string(v.captured) + " of " + std::to_string(v.expected) +
                " placed frames captured, " + std::to_string(v.expected - v.captured) +
                " not (process killed or restarted)";
  }
  return v;
}

}  // namespace rocecap::tools
