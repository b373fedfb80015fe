#include "tools/lib/verify_vdif.hpp"

#include <array>
#include <cstring>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tools/lib/verify_counts.hpp"
#include "tools/lib/verify_model.hpp"

namespace rocecap::tools {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The bytes a stream's file of `format` must hold for index `index` (headers only for vdifhdr).
std::vector<std::byte> expected_frame(const VdifFrameBuilder& b, uint32_t group, uint32_t antenna,
                                      uint32_t thread, uint64_t index, Slot slot,
                                      bool headers_only) {
  std::vector<std::byte> buf(b.frame_bytes());
  if (slot == Slot::missing) {
    capture::vdif::Header h = b.header(thread, index, Fate::plain);
    h.invalid = true;
    std::array<std::byte, capture::vdif::kHeaderBytes> raw{};
    capture::vdif::encode(h, raw);
    std::memcpy(buf.data() + b.vtp_bytes(), raw.data(), h.header_bytes());
  } else {
    b.build(group, antenna, thread, index, 0, slot == Slot::invalid ? Fate::invalid : Fate::plain,
            buf);
  }
  buf.erase(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(b.vtp_bytes()));
  if (headers_only) buf.resize(b.header(thread, index, Fate::plain).header_bytes());
  return buf;
}

// The files of a stream and format in listed order, grouped by the attempt that wrote them
// (one group for a run of one attempt).
std::vector<std::vector<std::string>> files_by_attempt(const json& m, const char* format) {
  std::vector<std::vector<std::string>> out;
  int attempt = 0;
  for (const json& f : m.at("files")) {
    if (f.at("format").get<std::string>() != format) continue;
    if (out.empty() || f.value("attempt", 1) != attempt) out.emplace_back();
    attempt = f.value("attempt", 1);
    out.back().push_back(f.at("path").get<std::string>());
  }
  return out;
}

// The files concatenated; false (the problem noted) when one cannot be read.
bool read_files(StreamVerdict& v, const std::vector<std::string>& names, const fs::path& root,
                std::vector<std::byte>& got) {
  for (const std::string& name : names) {
    std::ifstream in(root / name, std::ios::binary);
    std::error_code ec;
    const std::size_t size = got.size();
    got.resize(size + (in ? fs::file_size(root / name, ec) : 0));
    in.read(reinterpret_cast<char*>(got.data() + size),
            static_cast<std::streamsize>(got.size() - size));
    if (!in || ec) {
      v.problems.push_back(name + ": cannot be read");
      return false;
    }
  }
  return true;
}

struct StreamFiles {
  const VdifFrameBuilder& b;
  uint32_t group = kNoPulseGroup;  // pulse group (FrameBuilder::pulse_group)
  uint32_t antenna = 0, thread = 0;
  const StreamExpectation& e;
  const char* format = "raw";
  bool headers_only() const { return std::string(format) == "vdifhdr"; }
  std::size_t stride() const {
    return headers_only() ? b.header(thread, e.first, Fate::plain).header_bytes()
                          : b.frame_bytes() - b.vtp_bytes();
  }
};

// `got` against the expected frames [first, last] of the stream; empty when identical, else
// the first difference by byte offset and frame index.
std::string compare_window(const StreamFiles& sf, const std::vector<std::byte>& got, uint64_t first,
                           uint64_t last) {
  std::size_t at = 0;
  for (uint64_t i = first; i <= last; ++i) {
    const auto want = expected_frame(sf.b, sf.group, sf.antenna, sf.thread, i,
                                     sf.e.slots[i - sf.e.first], sf.headers_only());
    if (got.size() - at < want.size() || std::memcmp(got.data() + at, want.data(), want.size())) {
      return std::string(sf.format) + ": frame index " + std::to_string(i) + " at byte " +
             std::to_string(at) + " differs from the generator's";
    }
    at += want.size();
  }
  if (at == got.size()) return {};
  return std::string(sf.format) + ": " + std::to_string(got.size() - at) +
         " bytes after the last expected frame";
}

// The stream's files of `format`, concatenated, against the expected frames; the first
// difference named by file offset and frame index.
void compare_files(StreamVerdict& v, const json& m, const fs::path& root, const StreamFiles& sf) {
  std::vector<std::byte> got;
  std::size_t nfiles = 0;
  for (const auto& group : files_by_attempt(m, sf.format)) {
    if (!read_files(v, group, root, got)) return;
    nfiles += group.size();
  }
  if (nfiles == 0 && sf.headers_only()) return;  // not written by this run
  const std::string problem =
      sf.e.any ? compare_window(sf, got, sf.e.first, sf.e.last)
               : (got.empty() ? "" : std::string(sf.format) + ": bytes where no frame was placed");
  if (!problem.empty()) return v.problems.push_back(problem);
  v.checked.push_back(std::string(sf.format) + ": " + std::to_string(nfiles) +
                      " file(s) byte-identical");
}

// The index of the VDIF frame whose header is at `offset` of `got`.
std::optional<uint64_t> index_at(const StreamFiles& sf, const std::vector<std::byte>& got,
                                 std::size_t offset) {
  capture::vdif::Header h;
  const std::span<const std::byte> rest(got.data() + offset, got.size() - offset);
  if (!capture::vdif::decode(rest, h)) return std::nullopt;
  return capture::vdif::absolute_index(h, sf.b.timing());
}

// A run with a killed attempt (tools/lib/verify_partial.hpp): each attempt's files must be
// whole frames, byte-identical to the generator's over the window they cover.
void compare_partial_files(StreamVerdict& v, const json& m, const fs::path& root,
                           const StreamFiles& sf) {
  std::vector<bool> covered(sf.e.slots.size(), false);
  std::string windows;
  for (const auto& group : files_by_attempt(m, sf.format)) {
    std::vector<std::byte> got;
    if (!read_files(v, group, root, got)) return;
    if (got.empty()) continue;
    const std::size_t stride = sf.stride();
    const auto first = got.size() % stride == 0 ? index_at(sf, got, 0) : std::nullopt;
    const auto last = first ? index_at(sf, got, got.size() - stride) : std::nullopt;
    if (!first || !last || !sf.e.any || *first < sf.e.first || *last > sf.e.last ||
        *last < *first) {
      return v.problems.push_back(std::string(sf.format) + ": " + group.front() +
                                  "...: not whole frames the generator sent");
    }
    if (std::string p = compare_window(sf, got, *first, *last); !p.empty())
      return v.problems.push_back(p + " (files from " + group.front() + ")");
    for (uint64_t i = *first; i <= *last; ++i)
      covered[i - sf.e.first] = true;
    windows += (windows.empty() ? "[" : ", [") + std::to_string(*first) + ", " +
               std::to_string(*last) + "]";
  }
  uint64_t placed = 0, captured = 0;
  for (std::size_t k = 0; k < sf.e.slots.size(); ++k) {
    placed += sf.e.slots[k] != Slot::missing;
    captured += covered[k] && sf.e.slots[k] != Slot::missing;
  }
  v.checked.push_back(std::string(sf.format) + ": windows " + (windows.empty() ? "none" : windows) +
                      " byte-identical; " + std::to_string(captured) + " of " +
                      std::to_string(placed) + " placed frames captured");
}

// The stream's counters against the sequencing model (a run of one attempt).
void compare_counts(StreamVerdict& v, const json& m, const VdifFrameBuilder& b,
                    const RunSettings& run, const StreamExpectation& e) {
  compare_sequencing(v, m, e, b.frame_bytes() - b.vtp_bytes());
  compare_count(v, "fill_frames", m.at("fill_frames").get<uint64_t>(),
                run.raw && run.fill_gaps ? e.lost : 0);
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
    const uint32_t thread = b.thread_position(g.thread);
    const uint32_t group = frames.pulse_group(g.group, g.port);
    const StreamFiles raw{b, group, g.antenna, thread, e, "raw"},
        hdr{b, group, g.antenna, thread, e, "vdifhdr"};
    if (r.partial) {
      if (run.raw && run.fill_gaps && !run.strip_headers) compare_partial_files(v, m, root, raw);
      compare_partial_files(v, m, root, hdr);
      v.checked.push_back("counters not compared: a killed attempt's counters are a snapshot");
    } else {
      compare_counts(v, m, b, run, e);
      if (run.raw && run.fill_gaps && !run.strip_headers) compare_files(v, m, root, raw);
      compare_files(v, m, root, hdr);
    }
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
