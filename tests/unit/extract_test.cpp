// `rocecap extract` in one process (daemon/lib/extract): recordings written here frame by frame
// (CODIF and VDIF raw files as the raw writer lays them out, the run manifest listing them),
// windows cut out of them and compared with the frames they must hold, worked out here from
// the generator's frame builder: fill frames where the recording has them, made fill frames
// (with the manifest's reason) where the recording lacks frames, `not_recorded` beyond it; the
// seek lands with one header read in a contiguous file and bisects a file whose index jumps.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "daemon/lib/extract/extractor.hpp"
#include "daemon/lib/extract/frame_file.hpp"
#include "test_frames.hpp"
#include "writer_test_util.hpp"
#include "writers/fault_injection.hpp"

namespace rocecap::daemon {
namespace {

namespace tf = ::rocecap::test;
namespace codif = capture::codif;
namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;
using nlohmann::json;

constexpr uint64_t kFrame = codif::kHeaderBytes + tf::kPayload;
constexpr uint64_t kVdifFps = 1000;

Bytes codif_frame(uint64_t i, bool fill = false) {
  codif::Header h = codif::at_index(tf::base_header(), tf::kTiming, i);
  h.invalid = fill;
  Bytes out(kFrame);
  codif::encode(h, std::span<std::byte, 64>(out.data(), 64));
  for (uint32_t k = 0; k < tf::kPayload; ++k)
    out[64 + k] = fill ? std::byte{0} : tf::data_byte(i, k);
  return out;
}

// VDIF frame `i`: 32-byte header (1000 frames per second, epoch 50), 256 data bytes that tell
// the frames apart.
Bytes vdif_frame(uint64_t i, bool fill = false) {
  capture::vdif::Header h;
  h.seconds = static_cast<uint32_t>(i / kVdifFps);
  h.frame = static_cast<uint32_t>(i % kVdifFps);
  h.epoch = 50;
  h.nbits = 2;
  h.invalid = fill;
  h.frame_words = (32 + 256) / 8;
  Bytes out(32 + 256);
  std::array<std::byte, 32> hb{};
  capture::vdif::encode(h, hb);
  std::copy(hb.begin(), hb.end(), out.begin());
  for (uint32_t k = 0; k < 256; ++k)
    out[32 + k] = fill ? std::byte{0} : static_cast<std::byte>((i * 7 + k) & 0xff);
  return out;
}

using FrameFn = Bytes (*)(uint64_t, bool);

// The frames [first, last] as a file: `fills` as fill frames, `missing` left out.
Bytes frames(FrameFn fn, uint64_t first, uint64_t last, const std::set<uint64_t>& fills = {},
             const std::set<uint64_t>& missing = {}) {
  Bytes out;
  for (uint64_t i = first; i <= last; ++i) {
    if (missing.count(i) != 0) continue;
    const Bytes f = fn(i, fills.count(i) != 0);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

void write_bytes(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

Bytes read_bytes(const fs::path& p) {
  return writers::test::read_file(p);
}

// A run directory <tmp>/out/r1 with a manifest of one stream (antenna "a" of group
// 239.17.0.1:36001 on eth0), its raw files added with add().
struct Recorded {
  writers::test::TempDir tmp;
  std::string yaml_extra;  // more lines under streams:
  std::string format = "codif";
  bool strip = false;
  json files = json::array();
  json missing = json::array();
  json lost_files = json::array();
  json targets;  // null: one target (output.directory)
  std::string state = "stopped";

  fs::path out() const { return tmp.path() / "out"; }
  fs::path dir() const { return out() / "r1"; }
  // A raw file holding `bytes`, on target `target` (several targets: <tmp>/t<target>).
  void add(const std::string& name, const Bytes& bytes, int target = -1) {
    json f{{"path", "r1/" + name}, {"format", "raw"}, {"bytes", bytes.size()}};
    fs::path root = out();
    if (target >= 0) {
      root = tmp.path() / ("t" + std::to_string(target));
      f["target"] = target;
    }
    write_bytes(root / "r1" / name, bytes);
    files.push_back(f);
  }
  std::string output_formats = "[raw]";  // output.formats
  std::string yaml() const {
    std::string y =
        "run:\n  name: r1\n  duration: 60s\ncapture:\n  backend: pcap-file\n"
        "  pcap_file: /nonexistent.pcap\n  interfaces:\n    - name: eth0\n"
        "      groups: [239.17.0.1:36001]\nstreams:\n  format: " +
        format + "\n";
    if (format == "vdif") y += "  frames_per_second: 1000\n";
    y += "  antennas:\n    - { name: a, source: 192.0.2.11 }\n" + yaml_extra;
    y += "output:\n  directory: " + out().string() + "\n  formats: " + output_formats + "\n";
    if (strip) y += "  strip_headers: true\n";
    return y + "metrics:\n  enabled: false\n";
  }
  void save() const {
    json s{{"interface", "eth0"},
           {"group", "239.17.0.1"},
           {"port", 36001},
           {"antenna", "a"},
           {"files", files},
           {"lost_files", lost_files},
           {"write_error_lost", {{"raw", {{"frames", 0}, {"gaps", missing}}}}}};
    json m{{"run", "r1"},
           {"state", state},
           {"config", {{"file", "r1.yaml"}, {"text", yaml()}}},
           {"streams", json::array({s})}};
    if (!targets.is_null()) m["targets"] = targets;
    const std::string text = m.dump();
    const auto* p = reinterpret_cast<const std::byte*>(text.data());
    write_bytes(dir() / "manifest.json", Bytes(p, p + text.size()));
  }
  ExtractOutcome extract(const json& request, std::vector<config::OutputFormat> formats = {},
                         const std::string& out_name = "x") {
    save();
    ExtractOptions o;
    o.run_dir = dir();
    o.request = request.dump();
    o.out_dir = tmp.path() / out_name;
    o.formats = std::move(formats);
    return daemon::extract(o);
  }
};

json codif_time(uint64_t index) {  // tf::base_header's epoch, 1 s periods of 1000 frames
  const codif::Header h = codif::at_index(tf::base_header(), tf::kTiming, index);
  return {{"epoch", h.epoch}, {"seconds", h.seconds}, {"frame", h.frame}};
}

json window(uint64_t first, uint64_t end) {
  return {{"start", codif_time(first)}, {"end", codif_time(end)}};
}

Bytes file_of(const ExtractOutcome& x, std::size_t k = 0) {
  return read_bytes(x.dump.at("streams").at(0).at("files").at(k).at("path").get<std::string>());
}

TEST(Extract, AWindowOverThreeTargetsIsTheRecordedFramesWithTheRecordingsFillFrames) {
  Recorded run;
  run.targets = json::array();
  for (int t = 0; t < 3; ++t) {
    run.targets.push_back({{"directory", (run.tmp.path() / ("t" + std::to_string(t))).string()}});
  }
  const std::set<uint64_t> lost{1995, 2003, 2100};  // fill frames the writer put in the files
  run.add("a.0000.codif", frames(codif_frame, 1900, 1999, lost), 2);
  run.add("a.0001.codif", frames(codif_frame, 2000, 2099, lost), 0);
  run.add("a.0002.codif", frames(codif_frame, 2100, 2199, lost), 1);
  const ExtractOutcome x = run.extract(window(1990, 2150));
  const json& s = x.dump.at("streams").at(0);
  EXPECT_TRUE(x.ok);
  EXPECT_EQ(s.at("window").at("first_frame"), 1990);
  EXPECT_EQ(s.at("window").at("last_frame"), 2149);
  EXPECT_EQ(s.at("frames"), 157);
  EXPECT_EQ(s.at("fill_frames"), 3);
  EXPECT_TRUE(s.at("not_recorded").empty());
  EXPECT_EQ(file_of(x), frames(codif_frame, 1990, 2149, lost));
  ASSERT_EQ(s.at("gaps").size(), 3u);
  EXPECT_EQ(s.at("gaps")[1].at("first_frame"), 2003);
  EXPECT_EQ(s.at("gaps")[1].at("reason"), "lost by the stream: a fill frame in the recording");
  EXPECT_EQ(x.dump.at("formats"), json::array({"raw"}));
}

TEST(Extract, AContiguousFileLandsWithOneHeaderReadAndAJumpInsideOneIsBisected) {
  Recorded run;
  run.add("a.0000.codif", frames(codif_frame, 1000, 1999));
  Bytes jumped = frames(codif_frame, 3000, 3099);  // a resynchronisation: 3000 -> 9000
  const Bytes after = frames(codif_frame, 9000, 9099);
  jumped.insert(jumped.end(), after.begin(), after.end());
  run.add("a.0001.codif", jumped);
  FrameFormat f;
  const FrameFile a(run.out() / "r1/a.0000.codif", f), b(run.out() / "r1/a.0001.codif", f);
  uint64_t reads = 0;
  EXPECT_EQ(a.seek(1500, &reads), 500u);
  EXPECT_EQ(reads, 1u);
  EXPECT_EQ(a.seek(999), 0u);
  EXPECT_EQ(a.seek(2000), a.frames());
  reads = 0;
  EXPECT_EQ(b.seek(9050, &reads), 150u);
  EXPECT_GT(reads, 1u);
  EXPECT_LE(reads, 10u);  // a bisection of 200 frames, not a scan
  EXPECT_EQ(b.seek(5000), 100u);
  EXPECT_EQ(b.last_index(), 9099u);
  // Across the jump: the frames the recording never had are made fill frames, with why.
  const ExtractOutcome x = run.extract(window(3090, 9010));
  const json& s = x.dump.at("streams").at(0);
  EXPECT_EQ(s.at("frames"), 20);
  EXPECT_EQ(s.at("fill_frames"), 5900);
  std::set<uint64_t> made;
  for (uint64_t i = 3100; i < 9000; ++i)
    made.insert(i);
  Bytes want = frames(codif_frame, 3090, 3099);
  const Bytes fills = frames(codif_frame, 3100, 8999, made);
  const Bytes tail = frames(codif_frame, 9000, 9009);
  want.insert(want.end(), fills.begin(), fills.end());
  want.insert(want.end(), tail.begin(), tail.end());
  EXPECT_EQ(file_of(x), want);
  ASSERT_EQ(s.at("gaps").size(), 1u);
  EXPECT_NE(s.at("gaps")[0].at("reason").get<std::string>().find("not in the recording's files"),
            std::string::npos);
}

TEST(Extract, WriteErrorGapsAndLostFilesBecomeFillFramesListedWithTheirReason) {
  Recorded run;
  run.add("a.0000.codif", frames(codif_frame, 1000, 1099));
  run.add("a.0001.codif", frames(codif_frame, 1150, 1199));  // 1100..1149: a write error
  run.add("a.0003.codif", frames(codif_frame, 1300, 1399));  // 1200..1299: a lost file
  run.missing.push_back({1100, 50});
  run.lost_files.push_back({{"path", "r1/a.0002.codif"},
                            {"format", "raw"},
                            {"first_index", 1200},
                            {"frames", 100},
                            {"reason", "storage lost: unmounted"}});
  const ExtractOutcome x =
      run.extract(window(1090, 1310), {config::OutputFormat::raw, config::OutputFormat::codifhdr});
  const json& s = x.dump.at("streams").at(0);
  std::set<uint64_t> made;
  for (uint64_t i = 1100; i < 1300; ++i) {
    if (i < 1150 || i >= 1200) made.insert(i);
  }
  const Bytes want = frames(codif_frame, 1090, 1309, made);
  EXPECT_EQ(file_of(x, 0), want);
  Bytes heads;
  for (std::size_t k = 0; k < want.size(); k += kFrame)
    heads.insert(heads.end(), want.begin() + static_cast<std::ptrdiff_t>(k),
                 want.begin() + static_cast<std::ptrdiff_t>(k + 64));
  EXPECT_EQ(file_of(x, 1), heads);
  EXPECT_EQ(s.at("frames"), 220 - 150);
  EXPECT_EQ(s.at("fill_frames"), 150);
  ASSERT_EQ(s.at("gaps").size(), 2u);
  EXPECT_EQ(s.at("gaps")[0].at("frames"), 50);
  EXPECT_NE(s.at("gaps")[0].at("reason").get<std::string>().find("write error"), std::string::npos);
  EXPECT_EQ(s.at("gaps")[1].at("first_frame"), 1200);
  EXPECT_NE(s.at("gaps")[1].at("reason").get<std::string>().find("unmounted"), std::string::npos);
}

TEST(Extract, WindowsBeyondTheRecordingAreListedNotRecordedAndACutLastFrameIsLeft) {
  Recorded run;
  Bytes b = frames(codif_frame, 1000, 1099);
  b.resize(b.size() - 100);  // the run is still writing its last frame
  run.add("a.0000.codif", b);
  run.state = "running";
  const ExtractOutcome x = run.extract(window(990, 1110));
  const json& s = x.dump.at("streams").at(0);
  ASSERT_EQ(s.at("not_recorded").size(), 2u);
  EXPECT_EQ(s.at("not_recorded")[0].at("last_frame"), 999);
  EXPECT_EQ(s.at("not_recorded")[0].at("reason"), "before the recording's first frame");
  EXPECT_EQ(s.at("not_recorded")[1].at("first_frame"), 1099);
  EXPECT_NE(s.at("not_recorded")[1].at("reason").get<std::string>().find("still recording"),
            std::string::npos);
  EXPECT_EQ(s.at("recorded").at("last_frame"), 1098);
  EXPECT_EQ(file_of(x), frames(codif_frame, 1000, 1098));
  // Wholly outside: nothing written, the stream says so.
  const ExtractOutcome y = run.extract(window(5000, 5010), {}, "y");
  EXPECT_TRUE(y.dump.at("streams")[0].at("recorded").is_null());
  EXPECT_TRUE(y.dump.at("streams")[0].at("files").empty());
}

TEST(Extract, VdifRecordingsAreCutInVdifTimeWithVdifhdr) {
  Recorded run;
  run.format = "vdif";
  const uint64_t base = 100000;  // second 100 of epoch 50
  run.add("a.0000.vdif", frames(vdif_frame, base, base + 199, {base + 50}));
  const json req{{"start", {{"epoch", 50}, {"seconds", 100}, {"frame", 40}}},
                 {"end", {{"epoch", 50}, {"seconds", 100}, {"frame", 60}}}};
  const ExtractOutcome x =
      run.extract(req, {config::OutputFormat::raw, config::OutputFormat::vdifhdr});
  const json& s = x.dump.at("streams").at(0);
  EXPECT_EQ(s.at("window").at("first_frame"), base + 40);
  EXPECT_EQ(s.at("frames"), 19);
  EXPECT_EQ(s.at("fill_frames"), 1);
  const Bytes want = frames(vdif_frame, base + 40, base + 59, {base + 50});
  EXPECT_EQ(file_of(x, 0), want);
  Bytes heads;
  for (std::size_t k = 0; k < want.size(); k += 288)
    heads.insert(heads.end(), want.begin() + static_cast<std::ptrdiff_t>(k),
                 want.begin() + static_cast<std::ptrdiff_t>(k + 32));
  EXPECT_EQ(file_of(x, 1), heads);
  EXPECT_NE(s.at("files")[0].at("path").get<std::string>().find(".vdif"), std::string::npos);
}

std::string refusal(Recorded& run, const json& request,
                    std::vector<config::OutputFormat> formats = {}, const std::string& out = "x") {
  try {
    run.extract(request, std::move(formats), out);
  } catch (const ExtractError& e) {
    return e.what();
  }
  return "(not refused)";
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A disk that fails under the extract (the file layer's fault seam, as a disk answering EIO):
// the extract is failed, its errors listed, the file holds whole frames only.
TEST(Extract, AWriteErrorFailsTheExtractWithTheErrorListed) {
  Recorded run;
  const Bytes all = frames(codif_frame, 1000, 3999);  // 3.3 MB: several 1 MiB staging writes
  run.add("a.0000.codif", all);
  fs::create_directories(run.tmp.path() / "x");
  writers::fault::Spec spec;
  spec.directory = run.tmp.path() / "x";
  spec.after_bytes = 3u << 19;  // the second staging write fails, and every one after it
  writers::fault::install(spec);
  const ExtractOutcome x = run.extract(window(1000, 4000));
  writers::fault::clear();
  const json& s = x.dump.at("streams").at(0);
  EXPECT_FALSE(x.ok);
  EXPECT_EQ(x.dump.at("state"), "failed");
  ASSERT_FALSE(s.at("errors").empty());
  EXPECT_TRUE(has(s.at("errors")[0], "injected")) << s.at("errors");
  const Bytes got = file_of(x);
  EXPECT_EQ(got.size() % kFrame, 0u);  // whole frames only
  EXPECT_GT(got.size(), 0u);
  EXPECT_LE(got.size(), std::size_t{1} << 20);
  EXPECT_EQ(got, Bytes(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(got.size())));
  // What the file holds and what it lacks add up to the window.
  EXPECT_EQ(s.at("frames"), got.size() / kFrame);
  EXPECT_EQ(s.at("write_error_lost").at("raw").at("frames").get<uint64_t>() + got.size() / kFrame,
            3000u);
}

TEST(Extract, WhatCannotBeServedIsRefusedNamingWhy) {
  Recorded run;
  run.add("a.0000.codif", frames(codif_frame, 1000, 1099));
  const json w = window(1000, 1010);
  EXPECT_TRUE(has(refusal(run, w, {config::OutputFormat::pcap}), "no network headers"));
  EXPECT_TRUE(has(refusal(run, w, {config::OutputFormat::vdifhdr}), "streams are CODIF"));
  json g = w;
  g["groups"] = {"239.9.9.9:1"};
  EXPECT_TRUE(has(refusal(run, g), "unknown group '239.9.9.9:1'"));
  json d = w;
  d["dm"] = 100;
  EXPECT_TRUE(has(refusal(run, d), "streams.frequencies"));
  json st;
  st["status"] = 3;
  EXPECT_TRUE(has(refusal(run, st), "status"));
  EXPECT_TRUE(has(refusal(run, window(1010, 1000)), "bad_window"));
  run.extract(w);
  EXPECT_TRUE(has(refusal(run, w), "exists and is not empty"));
  run.strip = true;
  EXPECT_TRUE(has(refusal(run, w, {}, "z"), "strip_headers"));
  run.strip = false;
  run.output_formats = "[codifhdr]";
  EXPECT_TRUE(has(refusal(run, w, {}, "z"), "output.formats has no raw"));
  run.output_formats = "[raw]";
  run.format = "udp";
  EXPECT_TRUE(has(refusal(run, w, {}, "z"), "udp"));
  fs::remove(run.dir() / "manifest.json");
  ExtractOptions o;
  o.run_dir = run.dir();
  o.request = w.dump();
  try {
    daemon::extract(o);
    ADD_FAILURE() << "no manifest: not refused";
  } catch (const ExtractError& e) {
    EXPECT_TRUE(has(e.what(), "manifest.json: cannot be read"));
  }
}

TEST(Extract, AFileThatIsNotTheStreamsFramesIsAProblemNotACrash) {
  Recorded run;
  Bytes first = frames(codif_frame, 1000, 1099);
  std::fill_n(first.begin() + 5 * static_cast<std::ptrdiff_t>(kFrame), 8,
              std::byte{0x5a});  // frame 1005: its sync word overwritten
  run.add("a.0000.codif", first);
  run.add("a.0001.codif", Bytes(5000, std::byte{0x5a}));
  const ExtractOutcome x = run.extract(window(1000, 1010));
  const json& s = x.dump.at("streams").at(0);
  ASSERT_EQ(s.at("problems").size(), 2u);
  EXPECT_TRUE(has(s.at("problems")[0], "a.0001.codif: its first bytes are not a CODIF frame"));
  EXPECT_TRUE(has(s.at("problems")[1], "1 frame(s) in the window's files did not read"));
  EXPECT_EQ(file_of(x), frames(codif_frame, 1000, 1009, {1005}));
  EXPECT_EQ(s.at("fill_frames"), 1);
}

}  // namespace
}  // namespace rocecap::daemon
