#include "tools/lib/verify_vdif.hpp"

#include <array>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "tools/lib/verify_model.hpp"

namespace rocecap::tools {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

void compare(StreamVerdict& v, const char* what, uint64_t actual, uint64_t expected) {
  v.expected[what] = expected;
  v.actual[what] = actual;
  if (actual != expected) {
    v.problems.push_back(std::string(what) + " " + std::to_string(actual) + ", expected " +
                         std::to_string(expected));
  }
}

// The bytes a stream's file of `format` must hold for index `index` (headers only for vdifhdr).
std::vector<std::byte> expected_frame(const VdifFrameBuilder& b, uint32_t antenna, uint32_t thread,
                                      uint64_t index, Slot slot, bool headers_only) {
  std::vector<std::byte> buf(b.frame_bytes());
  if (slot == Slot::missing) {
    capture::vdif::Header h = b.header(thread, index, Fate::plain);
    h.invalid = true;
    std::array<std::byte, capture::vdif::kHeaderBytes> raw{};
    capture::vdif::encode(h, raw);
    std::memcpy(buf.data() + b.vtp_bytes(), raw.data(), h.header_bytes());
  } else {
    b.build(antenna, thread, index, 0, slot == Slot::invalid ? Fate::invalid : Fate::plain, buf);
  }
  buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(b.vtp_bytes()));
  if (headers_only) buf.resize(b.header(thread, index, Fate::plain).header_bytes());
  return buf;
}

// The stream's files of `format`, concatenated, against the expected frames; the first
// difference named by file offset and frame index.
void compare_files(StreamVerdict& v, const json& m, const char* format, const fs::path& root,
                   const VdifFrameBuilder& b, uint32_t antenna, uint32_t thread,
                   const StreamExpectation& e) {
  std::vector<std::byte> got;
  std::size_t nfiles = 0;
  for (const json& f : m.at("files")) {
    if (f.at("format").get<std::string>() != format) continue;
    std::ifstream in(root / f.at("path").get<std::string>(), std::ios::binary);
    if (!in) {
      v.problems.push_back(f.at("path").get<std::string>() + ": cannot be read");
      return;
    }
    const std::size_t size = got.size();
    std::error_code ec;
    got.resize(size + fs::file_size(root / f.at("path").get<std::string>(), ec));
    in.read(reinterpret_cast<char*>(got.data() + size),
            static_cast<std::streamsize>(got.size() - size));
    if (ec || !in) {
      v.problems.push_back(f.at("path").get<std::string>() + ": cannot be read");
      return;
    }
    ++nfiles;
  }
  if (nfiles == 0 && std::string(format) == "vdifhdr") return;  // not written by this run
  std::size_t at = 0;
  for (uint64_t i = 0; e.any && i < e.slots.size(); ++i) {
    const auto want = expected_frame(b, antenna, thread, e.first + i, e.slots[i],
                                     std::string(format) == "vdifhdr");
    if (got.size() - at < want.size() || std::memcmp(got.data() + at, want.data(), want.size())) {
      v.problems.push_back(std::string(format) + ": frame index " + std::to_string(e.first + i) +
                           " at byte " + std::to_string(at) + " differs from the generator's");
      return;
    }
    at += want.size();
  }
  if (at != got.size()) {
    v.problems.push_back(std::string(format) + ": " + std::to_string(got.size() - at) +
                         " bytes after the last expected frame");
    return;
  }
  v.checked.push_back(std::string(format) + ": " + std::to_string(nfiles) +
                      " file(s) byte-identical");
}

}  // namespace

void verify_vdif_streams(const json& manifest, const GenSummary& summary,
                         const FrameBuilder& frames, const RunSettings& run, const fs::path& root,
                         VerifyResult& r) {
  const VdifFrameBuilder& b = *frames.vdif();
  std::vector<bool> matched(summary.streams.size());
  for (const json& m : manifest.at("streams")) {
    StreamVerdict v;
    v.name = m.at("interface").get<std::string>() + " " + m.at("group").get<std::string>() + ":" +
             std::to_string(m.at("port").get<uint16_t>()) + " " +
             m.at("antenna").get<std::string>() + " (" + m.at("source").get<std::string>() + ")" +
             (m.contains("thread") ? " thread " + std::to_string(m.at("thread").get<int>()) : "");
    std::size_t k = 0;
    for (; k < summary.streams.size(); ++k) {
      const GenStream& g = summary.streams[k];
      if (!matched[k] && g.group == m.at("group").get<std::string>() &&
          g.port == m.at("port").get<uint16_t>() && g.source == m.at("source").get<std::string>() &&
          (!m.contains("thread") || g.thread == m.at("thread").get<uint16_t>())) {
        break;
      }
    }
    if (k == summary.streams.size()) {
      v.problems.push_back("not a stream of the generator's summary");
      r.streams.push_back(std::move(v));
      continue;
    }
    matched[k] = true;
    const GenStream& g = summary.streams[k];
    const StreamExpectation e = expect_stream(g, run.reorder_window == 0 ? 1 : run.reorder_window);
    auto get = [&](const char* key) { return m.at(key).get<uint64_t>(); };
    compare(v, "packets", get("packets"), e.packets);
    compare(v, "bytes", get("bytes"), e.packets * (b.frame_bytes() - b.vtp_bytes()));
    compare(v, "lost", get("lost"), e.lost);
    compare(v, "duplicate", get("duplicate"), e.duplicate);
    compare(v, "late", get("late"), e.late);
    compare(v, "late_dropped", get("late_dropped"), e.late_dropped);
    compare(v, "invalid", get("invalid"), e.invalid);
    compare(v, "resync", get("resync"), 0);
    compare(v, "fill_frames", get("fill_frames"), run.raw && run.fill_gaps ? e.lost : 0);
    const uint32_t thread = b.thread_position(g.thread);
    if (run.raw && run.fill_gaps && !run.strip_headers)
      compare_files(v, m, "raw", root, b, g.antenna, thread, e);
    compare_files(v, m, "vdifhdr", root, b, g.antenna, thread, e);
    r.streams.push_back(std::move(v));
  }
  for (std::size_t k = 0; k < summary.streams.size(); ++k) {
    if (matched[k]) continue;
    const GenStream& g = summary.streams[k];
    r.run_problems.push_back("generated stream " + g.group + ":" + std::to_string(g.port) + " <- " +
                             g.source + " thread " + std::to_string(g.thread) +
                             " is not in the manifest");
  }
}

}  // namespace rocecap::tools
