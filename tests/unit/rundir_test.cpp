// rundir/: files cut to their last whole record, the run directory lock, attempt merging.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "capture/vdif/header.hpp"
#include "codif_test_util.hpp"
#include "config/loader.hpp"
#include "config/name_template.hpp"
#include "rundir/attempts.hpp"
#include "rundir/file_scan.hpp"
#include "rundir/recover.hpp"
#include "rundir/run_lock.hpp"

namespace rocecap::rundir {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class RundirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rundir_test." + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& p, const std::vector<std::byte>& b) {
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  fs::path dir_;
};

std::vector<std::byte> frames(uint32_t n, bool headers_only) {
  std::vector<std::byte> out;
  capture::codif::Header h = capture::codif::test::askap();
  for (uint32_t i = 0; i < n; ++i) {
    h.frame = 100 + i;
    const auto f = capture::codif::test::payload(h);
    out.insert(out.end(), f.begin(), headers_only ? f.begin() + 64 : f.end());
  }
  return out;
}

TEST_F(RundirTest, RawFileCutToItsLastWholeFrame) {
  auto b = frames(3, false);
  const std::size_t whole = b.size();
  b.resize(whole + 1000);  // a torn fourth frame (the killed writer's last buffer)
  const auto f4 = frames(4, false);
  std::memcpy(b.data() + whole, f4.data() + whole, 1000);
  write(dir_ / "a.codif", b);
  ScanOptions o;
  o.trim = true;
  const FileScan s = scan_file(dir_ / "a.codif", FileKind::raw_codif, o);
  EXPECT_EQ(s.bytes_on_disk, whole + 1000);
  EXPECT_EQ(s.bytes_whole, whole);
  EXPECT_EQ(s.records, 3u);
  EXPECT_TRUE(s.trimmed);
  EXPECT_NE(s.stop.find("cut short"), std::string::npos) << s.stop;
  EXPECT_EQ(fs::file_size(dir_ / "a.codif"), whole);
  ASSERT_TRUE(s.first_index && s.last_index);
  EXPECT_EQ(*s.last_index - *s.first_index, 2u);
}

TEST_F(RundirTest, ZeroPaddingAfterTheLastFrameIsCut) {
  auto b = frames(2, false);
  const std::size_t whole = b.size();
  b.resize(whole + 4096);  // an O_DIRECT tail: zeros
  write(dir_ / "z.codif", b);
  ScanOptions o;
  o.trim = true;
  const FileScan s = scan_file(dir_ / "z.codif", FileKind::raw_codif, o);
  EXPECT_EQ(s.bytes_whole, whole);
  EXPECT_EQ(fs::file_size(dir_ / "z.codif"), whole);
}

TEST_F(RundirTest, CodifhdrCutToWholeHeadersAndDryRunChangesNothing) {
  auto b = frames(5, true);
  b.resize(b.size() + 10);
  write(dir_ / "h.chead", b);
  FileScan s = scan_file(dir_ / "h.chead", FileKind::codifhdr, {});
  EXPECT_EQ(s.records, 5u);
  EXPECT_EQ(s.bytes_whole, 5u * 64);
  EXPECT_EQ(fs::file_size(dir_ / "h.chead"), 5u * 64 + 10);  // trim not asked
}

TEST_F(RundirTest, PcapCutAtATornRecord) {
  std::vector<std::byte> b(24);
  const uint32_t magic = 0xa1b23c4d, snap = 9216, link = 1;
  std::memcpy(b.data(), &magic, 4);
  std::memcpy(b.data() + 16, &snap, 4);
  std::memcpy(b.data() + 20, &link, 4);
  for (int r = 0; r < 3; ++r) {
    const uint32_t hdr[4] = {1, 2, 100, 100};
    const auto* p = reinterpret_cast<const std::byte*>(hdr);
    b.insert(b.end(), p, p + 16);
    b.insert(b.end(), 100, std::byte{0x55});
  }
  const std::size_t whole = b.size();
  const uint32_t torn[4] = {1, 2, 100, 100};
  const auto* p = reinterpret_cast<const std::byte*>(torn);
  b.insert(b.end(), p, p + 16);
  b.insert(b.end(), 40, std::byte{0x55});
  write(dir_ / "i.pcap", b);
  ScanOptions o;
  o.trim = true;
  const FileScan s = scan_file(dir_ / "i.pcap", FileKind::pcap, o);
  EXPECT_EQ(s.records, 3u);
  EXPECT_EQ(s.bytes_whole, whole);
  EXPECT_EQ(fs::file_size(dir_ / "i.pcap"), whole);
}

TEST_F(RundirTest, SecondLockIsRefusedNamingTheHolder) {
  RunDirLock first(dir_, "rocecapd");
  try {
    RunDirLock second(dir_, "rocecapd");
    FAIL() << "a second lock on the same run directory was granted";
  } catch (const RunDirInUse& e) {  // its own type: rocecapd exits 6 for it, not 3
    EXPECT_NE(std::string(e.what()).find("in use by PID " + std::to_string(::getpid())),
              std::string::npos)
        << e.what();
  }
}

TEST_F(RundirTest, LockIsFreeAgainOnceReleased) {
  { RunDirLock first(dir_, "rocecapd"); }
  EXPECT_NO_THROW(RunDirLock again(dir_, "rocecapd"));
}

// The lock is the run directory's own inode: deleting or replacing `.rocecapd.lock` (a path
// anyone with write access to the directory can unlink) must not let a second process in.
TEST_F(RundirTest, DeletingTheLockFileDoesNotFreeTheRunDirectory) {
  RunDirLock first(dir_, "rocecapd");
  ASSERT_TRUE(fs::remove(dir_ / kLockFileName));
  try {
    RunDirLock second(dir_, "rocecapd");
    FAIL() << "a second lock was granted once the lock file was deleted";
  } catch (const RunDirInUse& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("in use by PID " + std::to_string(::getpid())), std::string::npos) << what;
    EXPECT_NE(what.find("deleted or replaced since"), std::string::npos) << what;
  }
}

TEST_F(RundirTest, ReplacingTheLockFileDoesNotFreeTheRunDirectoryNorHideTheHolder) {
  RunDirLock first(dir_, "rocecapd");
  std::ofstream(dir_ / "fake") << "999999 somebody else\n";
  fs::rename(dir_ / "fake", dir_ / kLockFileName);
  try {
    RunDirLock second(dir_, "rocecap recover");
    FAIL() << "a second lock was granted once the lock file was replaced";
  } catch (const RunDirInUse& e) {
    const std::string what = e.what();
    // The holder as the kernel knows it (/proc/locks), not the PID the new file claims.
    EXPECT_NE(what.find("in use by PID " + std::to_string(::getpid())), std::string::npos) << what;
    EXPECT_EQ(what.find("999999"), std::string::npos) << what;
  }
}

TEST_F(RundirTest, ALockFileDeletedBetweenRunsIsWrittenAgain) {
  { RunDirLock first(dir_, "rocecapd"); }
  ASSERT_TRUE(fs::remove(dir_ / kLockFileName));  // a leftover deleted between runs
  RunDirLock again(dir_, "rocecapd");
  std::ifstream in(dir_ / kLockFileName);
  std::string pid;
  in >> pid;
  EXPECT_EQ(pid, std::to_string(::getpid())) << "the new holder writes its PID again";
}

// An odd `.rocecapd.lock` (a directory, a FIFO) is no reason to refuse the run: the lock is the
// directory's; the missing PID is said.
TEST_F(RundirTest, AnOddLockFileLosesOnlyThePid) {
  for (const bool fifo : {false, true}) {
    fs::remove_all(dir_ / kLockFileName);
    if (fifo) {
      ASSERT_EQ(::mkfifo((dir_ / kLockFileName).c_str(), 0600), 0);
    } else {
      fs::create_directory(dir_ / kLockFileName);
    }
    RunDirLock first(dir_, "rocecapd");  // neither blocks (a FIFO opened for reading would)
    const std::string why = first.warning();
    EXPECT_NE(why.find((dir_ / kLockFileName).string()), std::string::npos) << why;
    EXPECT_NE(why.find(fifo ? "not a regular file" : "Is a directory"), std::string::npos) << why;
    EXPECT_THROW(RunDirLock second(dir_, "rocecapd"), RunDirInUse);
  }
}

TEST_F(RundirTest, RecoverAddsUnlistedFilesCutsTornOnesAndNamesTheNextSequenceNumber) {
  const std::string yaml =
      "run: {name: r}\n"
      "capture:\n"
      "  backend: pcap-file\n"
      "  pcap_file: /nonexistent.pcap\n"
      "  interfaces: [{name: rec0, groups: [239.1.1.1:4000]}]\n"
      "streams: {antennas: [{name: a1, source: 192.0.2.1}]}\n"
      "output: {directory: " +
      dir_.string() +
      ", formats: [raw]}\n"
      "metrics: {enabled: false}\n";
  config::HostChecks host;
  host.check_filesystem = false;
  const auto loaded = config::load_string(yaml, "t.yaml", host);
  ASSERT_TRUE(loaded.ok()) << loaded.problems.front().message;
  const config::RunConfig& cfg = *loaded.config;
  const config::StreamRef ref = config::enumerate_streams(cfg).front();
  const auto name = [&](uint64_t seq) {
    return config::stream_file_name(cfg, ref, config::OutputFormat::raw, seq);
  };
  fs::create_directories(dir_ / "r");
  const auto three = frames(3, false);
  // The killed run's last snapshot: running, seq 0 closed and listed, seq 3 not listed at all.
  const json snapshot = {
      {"state", "running"},
      {"config", {{"text", yaml}}},
      {"streams",
       json::array(
           {{{"interface", "rec0"},
             {"group", "239.1.1.1"},
             {"port", 4000},
             {"antenna", "a1"},
             {"packets", 2},
             {"last_frame", nullptr},
             {"files",
              json::array({{{"path", name(0)}, {"format", "raw"}, {"bytes", three.size()}}})}}})},
      {"interfaces", json::array()}};
  std::ofstream(dir_ / "r" / "manifest.json") << snapshot.dump();
  write(dir_ / name(0), three);
  auto torn = three;
  torn.resize(three.size() + 500);
  write(dir_ / name(3), torn);  // seq 1 and 2 failed to open (a full disk): a gap in the numbers
  RecoverOptions dry;
  dry.apply = false;
  RecoveryResult r = recover_run(cfg, dir_, dir_ / "r", dry);
  EXPECT_TRUE(r.needed);
  EXPECT_EQ(r.trimmed, 1u);
  EXPECT_EQ(fs::file_size(dir_ / name(3)), torn.size()) << "a dry run cut a file";
  EXPECT_EQ(read_manifest(dir_ / "r")["state"], "running") << "a dry run wrote the manifest";

  RecoverOptions apply;
  apply.by = "test";
  r = recover_run(cfg, dir_, dir_ / "r", apply);
  EXPECT_EQ(r.next_seq.at(name(0)), 4u);
  EXPECT_EQ(r.next_seq_any, 4u);
  EXPECT_EQ(r.unlisted, 1u);
  EXPECT_EQ(r.trimmed_bytes, 500u);
  EXPECT_EQ(fs::file_size(dir_ / name(3)), three.size());
  const json m = read_manifest(dir_ / "r");
  EXPECT_EQ(m["state"], "recovered");
  EXPECT_EQ(m["recovery"]["previous_state"], "running");
  EXPECT_EQ(m["recovery"]["by"], "test");
  const json& files = m["streams"][0]["files"];
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0]["bytes"], three.size());
  EXPECT_EQ(files[0]["records"], 3u);  // counted from its first and last header
  EXPECT_EQ(files[1]["path"], name(3));
  EXPECT_EQ(files[1]["seq"], 3u);
  EXPECT_EQ(files[1]["records"], 3u);
  EXPECT_EQ(files[1]["recovered"]["trimmed_bytes"], 500u);
  EXPECT_EQ(m["streams"][0]["recovered"]["frames_in_files"], 6u);
  EXPECT_FALSE(m["streams"][0]["last_frame"].is_null());
  EXPECT_EQ(m["streams"][0]["packets"], 2u) << "a counter that cannot be recomputed is kept";
  // Recovered once, nothing more to do.
  r = recover_run(cfg, dir_, dir_ / "r", apply);
  EXPECT_FALSE(r.needed);
}

// A symlink, a FIFO or a directory at the name of a file of the run (put there by hand, or by
// a tool) is not the run's: recovery reports it, skips it (never reads, cuts or follows it; a
// FIFO would block the reader) and lists it, and its sequence number stays in use. The rest
// of the run is recovered as usual.
TEST_F(RundirTest, OddFilesAtTheRunsNamesAreReportedSkippedAndListed) {
  const std::string yaml =
      "run: {name: r}\n"
      "capture:\n"
      "  backend: pcap-file\n"
      "  pcap_file: /nonexistent.pcap\n"
      "  interfaces: [{name: rec0, groups: [239.1.1.1:4000]}]\n"
      "streams: {antennas: [{name: a1, source: 192.0.2.1}]}\n"
      "output: {directory: " +
      dir_.string() +
      ", formats: [raw, codifhdr]}\n"
      "metrics: {enabled: false}\n";
  config::HostChecks host;
  host.check_filesystem = false;
  const auto loaded = config::load_string(yaml, "t.yaml", host);
  ASSERT_TRUE(loaded.ok()) << loaded.problems.front().message;
  const config::RunConfig& cfg = *loaded.config;
  const config::StreamRef ref = config::enumerate_streams(cfg).front();
  const auto name = [&](config::OutputFormat f, uint64_t seq) {
    return config::stream_file_name(cfg, ref, f, seq);
  };
  using config::OutputFormat;
  fs::create_directories(dir_ / "r");
  const json snapshot = {{"state", "stopped"},
                         {"config", {{"text", yaml}}},
                         {"streams", json::array()},
                         {"interfaces", json::array()}};
  std::ofstream(dir_ / "r" / "manifest.json") << snapshot.dump();
  write(dir_ / name(OutputFormat::raw, 0), frames(3, false));
  write(dir_ / name(OutputFormat::codifhdr, 0), frames(3, true));
  fs::create_symlink(dir_ / name(OutputFormat::raw, 0), dir_ / name(OutputFormat::raw, 1));
  ASSERT_EQ(::mkfifo((dir_ / name(OutputFormat::codifhdr, 1)).c_str(), 0600), 0);
  fs::create_directory(dir_ / name(OutputFormat::raw, 2));

  RecoverOptions apply;
  apply.by = "test";
  RecoveryResult r;
  ASSERT_NO_THROW(r = recover_run(cfg, dir_, dir_ / "r", apply));
  ASSERT_EQ(r.skipped.size(), 3u);
  std::map<std::string, std::string> kinds;
  for (const SkippedFile& f : r.skipped)
    kinds[f.path] = f.type;
  EXPECT_EQ(kinds[name(OutputFormat::raw, 1)], "symlink");
  EXPECT_EQ(kinds[name(OutputFormat::codifhdr, 1)], "FIFO");
  EXPECT_EQ(kinds[name(OutputFormat::raw, 2)], "directory");
  EXPECT_TRUE(r.needed) << "odd files at the run's names are listed in the manifest";
  EXPECT_EQ(r.next_seq.at(name(OutputFormat::raw, 0)), 3u) << "their numbers stay in use";
  EXPECT_EQ(r.next_seq.at(name(OutputFormat::codifhdr, 0)), 2u);
  const json m = read_manifest(dir_ / "r");
  ASSERT_EQ(m["recovery"]["skipped"].size(), 3u) << m["recovery"].dump(2);
  EXPECT_EQ(m["recovery"]["files_skipped"], 3u);
  for (const json& f : m["streams"][0]["files"]) {
    EXPECT_EQ(f["seq"], 0u) << "only the regular files are the run's: " << f.dump();
    EXPECT_EQ(f["records"], 3u);
  }
  EXPECT_EQ(m["streams"][0]["files"].size(), 2u);
  EXPECT_TRUE(fs::is_symlink(dir_ / name(OutputFormat::raw, 1))) << "left as it was";
  EXPECT_TRUE(fs::is_fifo(dir_ / name(OutputFormat::codifhdr, 1)));
  EXPECT_EQ(fs::file_size(dir_ / name(OutputFormat::raw, 0)), frames(3, false).size());
  // Listed once: a second recovery (or a restart) has nothing more to say about them.
  r = recover_run(cfg, dir_, dir_ / "r", apply);
  EXPECT_FALSE(r.needed) << r.reason;
  EXPECT_EQ(r.skipped.size(), 3u) << "still reported";
}

// A manifest.json that is not a regular file is refused by name, never read (a FIFO would
// block recovery and the restart for good).
TEST_F(RundirTest, AnOddManifestIsRefusedByName) {
  fs::create_directories(dir_ / "r");
  ASSERT_EQ(::mkfifo((dir_ / "r" / "manifest.json").c_str(), 0600), 0);
  try {
    (void)read_manifest(dir_ / "r");
    FAIL() << "an odd manifest was read";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find((dir_ / "r" / "manifest.json").string()), std::string::npos) << what;
    EXPECT_NE(what.find("FIFO"), std::string::npos) << what;
  }
}

// VDIF frames `first`.. of one thread at 1000 frames/s, 1024 data bytes, 32- or 16-byte headers.
std::vector<std::byte> vdif_frames(uint64_t first, uint32_t n, bool headers_only,
                                   bool legacy = false) {
  std::vector<std::byte> out;
  for (uint64_t i = first; i < first + n; ++i) {
    capture::vdif::Header h;
    h.legacy = legacy;
    h.seconds = static_cast<uint32_t>(i / 1000);
    h.frame = static_cast<uint32_t>(i % 1000);
    h.epoch = 52;
    h.nbits = 4;
    h.log2_nchan = 1;
    h.station_id = 0x564C;
    h.frame_words = static_cast<uint32_t>((h.header_bytes() + 1024) / 8);
    std::array<std::byte, capture::vdif::kHeaderBytes> hb{};
    capture::vdif::encode(h, hb);
    out.insert(out.end(), hb.begin(), hb.begin() + static_cast<long>(h.header_bytes()));
    if (!headers_only) out.insert(out.end(), 1024, std::byte{static_cast<unsigned char>(i)});
  }
  return out;
}

TEST_F(RundirTest, VdifFilesAreCutToWholeFramesAndHeaders) {
  auto raw = vdif_frames(5000, 4, false);
  const std::size_t whole = raw.size();
  raw.resize(whole + 700);  // a torn fifth frame
  write(dir_ / "v.vdif", raw);
  ScanOptions o;
  o.trim = true;
  o.vdif_rate.frames_per_second = 1000;
  FileScan s = scan_file(dir_ / "v.vdif", FileKind::raw_vdif, o);
  EXPECT_EQ(s.bytes_whole, whole) << s.stop;
  EXPECT_EQ(s.records, 4u);
  EXPECT_EQ(s.frame_bytes, 32u + 1024u);
  EXPECT_EQ(*s.first_index, 5000u);
  EXPECT_EQ(*s.last_index, 5003u);
  EXPECT_EQ(fs::file_size(dir_ / "v.vdif"), whole);
  auto hdr = vdif_frames(5000, 3, true, /*legacy=*/true);
  hdr.resize(hdr.size() + 9);
  write(dir_ / "v.vhead", hdr);
  s = scan_file(dir_ / "v.vhead", FileKind::vdifhdr, o);
  EXPECT_EQ(s.bytes_whole, 3u * 16u) << s.stop;
  EXPECT_EQ(s.header_bytes, 16u);
  EXPECT_EQ(*s.last_index, 5002u);
}

// A killed VDIF run (raw + vdifhdr): recovery keeps every whole frame. (It used to read the raw
// files as CODIF, find no header at byte 0, and cut the writer's open file to nothing.)
TEST_F(RundirTest, RecoverKeepsTheFramesOfAKilledVdifRun) {
  const std::string yaml =
      "run: {name: r}\n"
      "capture:\n"
      "  backend: pcap-file\n"
      "  pcap_file: /nonexistent.pcap\n"
      "  interfaces: [{name: rec0, groups: [239.1.1.1:4000]}]\n"
      "streams: {format: vdif, frames_per_second: 1000, antennas: [{name: a1, source: "
      "192.0.2.1}]}\n"
      "output: {directory: " +
      dir_.string() +
      ", formats: [raw, vdifhdr]}\n"
      "metrics: {enabled: false}\n";
  config::HostChecks host;
  host.check_filesystem = false;
  const auto loaded = config::load_string(yaml, "t.yaml", host);
  ASSERT_TRUE(loaded.ok()) << loaded.problems.front().message;
  const config::RunConfig& cfg = *loaded.config;
  const config::StreamRef ref = config::enumerate_streams(cfg).front();
  const auto name = [&](config::OutputFormat f, uint64_t seq) {
    return config::stream_file_name(cfg, ref, f, seq);
  };
  using F = config::OutputFormat;
  fs::create_directories(dir_ / "r");
  const json snapshot = {
      {"state", "running"},
      {"config", {{"text", yaml}}},
      {"streams", json::array({{{"interface", "rec0"},
                                {"group", "239.1.1.1"},
                                {"port", 4000},
                                {"antenna", "a1"},
                                {"packets", 5},
                                {"last_frame", nullptr},
                                {"files", json::array({{{"path", name(F::raw, 0)},
                                                        {"format", "raw"},
                                                        {"bytes", 3 * (32 + 1024)}}})}}})},
      {"interfaces", json::array()}};
  std::ofstream(dir_ / "r" / "manifest.json") << snapshot.dump();
  write(dir_ / name(F::raw, 0), vdif_frames(7000, 3, false));  // closed before the kill
  auto open_raw = vdif_frames(7003, 2, false);
  open_raw.resize(open_raw.size() + 100);  // the open file: two frames and a torn third
  write(dir_ / name(F::raw, 1), open_raw);
  auto open_hdr = vdif_frames(7000, 5, true);
  open_hdr.resize(open_hdr.size() + 5);
  write(dir_ / name(F::vdifhdr, 0), open_hdr);
  RecoverOptions apply;
  apply.by = "test";
  const RecoveryResult r = recover_run(cfg, dir_, dir_ / "r", apply);
  EXPECT_EQ(r.removed, 0u);
  EXPECT_EQ(r.trimmed, 2u);
  EXPECT_EQ(fs::file_size(dir_ / name(F::raw, 1)), 2u * (32 + 1024));
  EXPECT_EQ(fs::file_size(dir_ / name(F::vdifhdr, 0)), 5u * 32);
  EXPECT_EQ(r.next_seq.at(name(F::raw, 0)), 2u);
  EXPECT_EQ(r.next_seq.at(name(F::vdifhdr, 0)), 1u);
  const json m = read_manifest(dir_ / "r");
  const json& files = m["streams"][0]["files"];
  ASSERT_EQ(files.size(), 3u) << files.dump();
  EXPECT_EQ(m["streams"][0]["recovered"]["frames_in_files"], 5u);
  EXPECT_EQ(m["streams"][0]["last_frame"]["index"], 7004u);
}

// A run over three output targets (output.directories): t0 holds the manifest, t1 and t2 the
// marker; file names are the same relative to each target.
class TargetsRecoverTest : public RundirTest {
 protected:
  void SetUp() override {
    RundirTest::SetUp();
    yaml_ =
        "run: {name: r}\n"
        "capture:\n"
        "  backend: pcap-file\n"
        "  pcap_file: /nonexistent.pcap\n"
        "  interfaces: [{name: rec0, groups: [239.1.1.1:4000]}]\n"
        "streams: {antennas: [{name: a1, source: 192.0.2.1}]}\n"
        "output: {directories: [" +
        t(0).string() + ", " + t(1).string() + ", " + t(2).string() +
        "], formats: [raw]}\n"
        "metrics: {enabled: false}\n";
    config::HostChecks host;
    host.check_filesystem = false;
    auto loaded = config::load_string(yaml_, "t.yaml", host);
    ASSERT_TRUE(loaded.ok()) << loaded.problems.front().message;
    cfg_ = std::move(*loaded.config);
    for (int i = 0; i < 3; ++i)
      fs::create_directories(t(i) / "r");
    for (int i = 1; i < 3; ++i)
      marker(i, "r");
  }
  fs::path t(int i) const { return dir_ / ("t" + std::to_string(i)); }
  std::string name(uint64_t seq) const {
    return config::stream_file_name(cfg_, config::enumerate_streams(cfg_).front(),
                                    config::OutputFormat::raw, seq);
  }
  // As rocecapd writes it: the run, this target's index and every target's directory.
  void marker(int i, const std::string& run, int index = -1) {
    const json dirs = {t(0).string(), t(1).string(), t(2).string()};
    std::ofstream(t(i) / "r" / kTargetMarkerName)
        << json{{"run", run}, {"target", index < 0 ? i : index}, {"targets", dirs}}.dump();
  }
  // The killed attempt's last snapshot, listing `files` ({target, seq, bytes}).
  void snapshot(const std::vector<std::array<uint64_t, 3>>& files) {
    json list = json::array();
    for (const auto& [target, seq, bytes] : files)
      list.push_back({{"path", name(seq)},
                      {"format", "raw"},
                      {"bytes", bytes},
                      {"target", target},
                      {"first_index", 0},
                      {"frames", 0}});
    json targets = json::array();
    for (int i = 0; i < 3; ++i)
      targets.push_back({{"directory", t(i).string()}, {"state", "active"}});
    const json m = {{"state", "running"},
                    {"config", {{"text", yaml_}}},
                    {"targets", targets},
                    {"streams", json::array({{{"interface", "rec0"},
                                              {"group", "239.1.1.1"},
                                              {"port", 4000},
                                              {"antenna", "a1"},
                                              {"last_frame", nullptr},
                                              {"files", list}}})},
                    {"interfaces", json::array()}};
    std::ofstream(t(0) / "r" / "manifest.json") << m.dump();
  }
  RecoveryResult recover(bool apply = true) {
    RecoverOptions o;
    o.by = "test";
    o.apply = apply;
    o.targets = run_targets(read_manifest(t(0) / "r"), cfg_, t(0));
    return recover_run(cfg_, t(0), t(0) / "r", o);
  }
  std::string yaml_;
  config::RunConfig cfg_;
};

TEST_F(TargetsRecoverTest, FilesOnEveryTargetAreRelistedAndNumberingContinuesPastAll) {
  const auto three = frames(3, false);
  snapshot({{0, 0, three.size()}, {1, 1, three.size()}});
  write(t(0) / name(0), three);
  write(t(1) / name(1), three);
  auto torn = three;
  torn.resize(three.size() + 500);
  write(t(2) / name(2), torn);   // open when killed: not listed, cut short
  write(t(1) / name(4), three);  // seq 3 failed to open; 4 on target 1, not listed
  ASSERT_EQ(run_targets(read_manifest(t(0) / "r"), cfg_, t(0)),
            (std::vector<fs::path>{t(0), t(1), t(2)}));

  const RecoveryResult r = recover();
  EXPECT_TRUE(r.needed);
  EXPECT_EQ(r.files, 4u);
  EXPECT_EQ(r.unlisted, 2u);
  EXPECT_EQ(r.trimmed, 1u);
  EXPECT_EQ(r.next_seq.at(name(0)), 5u) << "the next file must not reuse a name on any target";
  EXPECT_EQ(r.next_seq_any, 5u);
  ASSERT_EQ(r.targets.size(), 3u);
  EXPECT_EQ(r.targets[1].files, 2u);
  EXPECT_EQ(r.targets[2].files, 1u);
  EXPECT_EQ(fs::file_size(t(2) / name(2)), three.size());
  const json m = read_manifest(t(0) / "r");
  const json& files = m["streams"][0]["files"];
  ASSERT_EQ(files.size(), 4u);
  const std::vector<std::pair<uint64_t, uint64_t>> want = {{0, 0}, {1, 1}, {2, 2}, {1, 4}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(files[i]["target"], want[i].first) << i;
    EXPECT_EQ(files[i]["path"], name(want[i].second)) << i;
    EXPECT_EQ(files[i]["frames"], 3u) << i;
    EXPECT_EQ(files[i]["first_index"], files[0]["first_index"]) << i;  // the same 3 frames
    EXPECT_EQ(files[i]["bytes"], three.size()) << i;
  }
  EXPECT_EQ(m["recovery"]["targets"].size(), 3u);
  EXPECT_TRUE(m["recovery"]["targets"][2]["problem"].is_null());
  EXPECT_EQ(m["streams"][0]["recovered"]["frames_in_files"], 12u);
  EXPECT_FALSE(recover().needed) << "recovered once, nothing more to do";
}

TEST_F(TargetsRecoverTest, AnUnreadableTargetKeepsItsListedFilesAndTheirNumbers) {
  const auto three = frames(3, false);
  snapshot({{0, 0, three.size()}, {2, 1, three.size()}, {1, 2, three.size()}});
  write(t(0) / name(0), three);
  write(t(1) / name(2), three);
  fs::remove_all(t(2));  // its disk is not mounted at the restart
  marker(1, "other");    // and target 1's run directory belongs to another run
  RecoveryResult r;
  ASSERT_NO_THROW(r = recover());
  ASSERT_EQ(r.targets.size(), 3u);
  EXPECT_TRUE(r.targets[0].problem.empty());
  EXPECT_NE(r.targets[1].problem.find("names run \"other\""), std::string::npos)
      << r.targets[1].problem;
  EXPECT_NE(r.targets[2].problem.find("no run directory"), std::string::npos)
      << r.targets[2].problem;
  EXPECT_EQ(r.next_seq.at(name(0)), 3u) << "listed files on unreadable targets keep their numbers";
  const json m = read_manifest(t(0) / "r");
  const json& files = m["streams"][0]["files"];
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[1]["target"], 2);
  EXPECT_NE(files[1]["recovered"]["note"].get<std::string>().find("could not be read"),
            std::string::npos);
  EXPECT_EQ(fs::file_size(t(1) / name(2)), three.size()) << "an unreadable target is not touched";
  EXPECT_FALSE(m["recovery"]["targets"][2]["problem"].is_null());

  // Target 2 back (remounted): its file is read again, the note goes.
  fs::create_directories(t(2) / "r");
  marker(2, "r");
  write(t(2) / name(1), three);
  const RecoveryResult again = recover();
  EXPECT_TRUE(again.targets[2].problem.empty()) << again.targets[2].problem;
  EXPECT_EQ(again.targets[2].files, 1u);
  const json m2 = read_manifest(t(0) / "r");
  EXPECT_FALSE(m2["streams"][0]["files"][1].contains("recovered")) << m2["streams"][0]["files"][1];
  EXPECT_EQ(m2["streams"][0]["files"][1]["target"], 2);
  EXPECT_EQ(m2["streams"][0]["files"][1]["frames"], 3u) << "read again, not taken as listed";
}
// Issue 23, item 11: only a target directory marked as this run's (rocecap-target.json naming
// the run and this target) is touched. One without the marker, or whose marker names another
// target, may be another run's or a disk mounted in the wrong place: nothing there is cut or
// removed, its listed files stay listed unchecked, and the result says why.
TEST_F(TargetsRecoverTest, ATargetWithoutThisRunsMarkerIsNeverCutNorCleaned) {
  const auto three = frames(3, false);
  snapshot({{0, 0, three.size()}, {1, 1, three.size()}, {2, 2, three.size()}});
  write(t(0) / name(0), three);
  auto torn = three;
  torn.resize(three.size() + 500);
  write(t(1) / name(1), torn);  // listed and torn: recovery would cut it
  write(t(1) / name(3), {});    // no whole record: recovery would remove it
  write(t(2) / name(2), torn);  // the same on target 2, whose marker says target 1
  fs::remove(t(1) / "r" / kTargetMarkerName);
  marker(2, "r", 1);
  RecoveryResult r;
  ASSERT_NO_THROW(r = recover());
  ASSERT_EQ(r.targets.size(), 3u);
  EXPECT_NE(r.targets[1].problem.find(kTargetMarkerName), std::string::npos)
      << "target 1: " << r.targets[1].problem;
  EXPECT_NE(r.targets[2].problem.find("target 1"), std::string::npos)
      << "target 2: " << r.targets[2].problem;
  EXPECT_EQ(fs::file_size(t(1) / name(1)), torn.size()) << "cut without the run's marker";
  EXPECT_TRUE(fs::exists(t(1) / name(3))) << "removed without the run's marker";
  EXPECT_EQ(fs::file_size(t(2) / name(2)), torn.size()) << "cut under another target's marker";
  const json m = read_manifest(t(0) / "r");
  const json& files = m["streams"][0]["files"];
  ASSERT_EQ(files.size(), 3u) << files;
  EXPECT_NE(files[1].dump().find("could not be read"), std::string::npos) << files[1];
  EXPECT_EQ(r.next_seq.at(name(0)), 3u) << "listed files on unmarked targets keep their numbers";
}

json stream(uint64_t packets, uint64_t lost, uint64_t first, uint64_t last, const char* file) {
  return {{"interface", "rec0"},
          {"group", "239.1.1.1"},
          {"port", 4000},
          {"antenna", "a1"},
          {"packets", packets},
          {"lost", lost},
          {"gaps", json::array()},
          {"first_frame", {{"index", first}}},
          {"last_frame", {{"index", last}}},
          {"files", json::array({{{"path", file}, {"format", "raw"}, {"bytes", 10}}})}};
}

TEST(Attempts, MergeSumsCountersListsFilesAndCountsTheRestartGap) {
  json prev = {{"state", "recovered"},
               {"started", "T1"},
               {"streams", json::array({stream(100, 2, 1000, 1101, "r/a.0000")})},
               {"interfaces", json::array()},
               {"errors", json::array()}};
  prev["streams"][0]["write_error_lost"] = {{"raw", {{"frames", 5}, {"gaps", {{1050, 5}}}}}};
  json cur = {{"state", "stopped"},
              {"started", "T2"},
              {"streams", json::array({stream(50, 0, 1200, 1249, "r/a.0001")})},
              {"interfaces", json::array()},
              {"errors", json::array()}};
  cur["streams"][0]["write_error_lost"] = {{"raw", {{"frames", 2}, {"gaps", {{1230, 2}}}}}};
  EXPECT_EQ(next_attempt(prev), 2);
  const json m = merge_attempts(prev, cur, 2);
  EXPECT_EQ(m["attempt"], 2);
  ASSERT_EQ(m["attempts"].size(), 2u);
  EXPECT_EQ(m["attempts"][0]["state"], "recovered");
  EXPECT_EQ(m["attempts"][1]["started"], "T2");
  EXPECT_EQ(m["started"], "T1");
  const json& s = m["streams"][0];
  EXPECT_EQ(s["packets"], 150u);
  EXPECT_EQ(s["lost_in_restarts"], 98u);  // 1102 .. 1199
  EXPECT_EQ(s["lost"], 2u + 98u);
  EXPECT_EQ(s["gaps"], json::array({json::array({1102, 98})}));
  EXPECT_EQ(s["write_error_lost"]["raw"]["frames"], 7u) << "a nested record of loss was dropped";
  EXPECT_EQ(s["write_error_lost"]["raw"]["gaps"].size(), 2u);
  EXPECT_EQ(s["first_frame"]["index"], 1000u);
  EXPECT_EQ(s["last_frame"]["index"], 1249u);
  ASSERT_EQ(s["files"].size(), 2u);
  EXPECT_EQ(s["files"][0]["attempt"], 1);
  EXPECT_EQ(s["files"][1]["attempt"], 2);
  // A third attempt keeps both earlier summaries.
  const json m3 = merge_attempts(m, cur, 3);
  EXPECT_EQ(m3["attempts"].size(), 3u);
  EXPECT_EQ(m3["streams"][0]["files"].size(), 3u);
}

}  // namespace
}  // namespace rocecap::rundir

namespace rocecap::rundir {
namespace {

TEST(Attempts, EarlierFilesKeepTheirTargetWhenARestartListsOtherTargets) {
  auto with_file = [](json s, const char* path, int target) {
    s["files"] =
        json::array({{{"path", path}, {"format", "raw"}, {"bytes", 10}, {"target", target}}});
    return s;
  };
  json prev = {
      {"state", "recovered"},
      {"targets",
       json::array({{{"directory", "/a"}}, {{"directory", "/b"}}, {{"directory", "/c/"}}})},
      {"streams", json::array({with_file(stream(1, 0, 1, 1, ""), "r/x.0000", 1)})},
      {"interfaces", json::array()}};
  prev["streams"][0]["files"].push_back(
      {{"path", "r/x.0001"}, {"format", "raw"}, {"bytes", 10}, {"target", 2}});
  // The restart's run file has /a and /c only.
  json cur = {{"state", "running"},
              {"targets", json::array({{{"directory", "/a"}}, {{"directory", "/c"}}})},
              {"streams", json::array({with_file(stream(1, 0, 5, 5, ""), "r/x.0002", 1)})},
              {"interfaces", json::array()}};
  const json m = merge_attempts(prev, cur, 2);
  ASSERT_EQ(m["targets"].size(), 3u);
  EXPECT_EQ(m["targets"][2]["directory"], "/b");  // an earlier target appended
  const json& files = m["streams"][0]["files"];
  ASSERT_EQ(files.size(), 3u);
  EXPECT_EQ(files[0]["target"], 2) << "r/x.0000 was on /b";
  EXPECT_EQ(files[1]["target"], 1) << "r/x.0001 was on /c";
  EXPECT_EQ(files[2]["target"], 1) << "this attempt's own index is kept";

  // An earlier single-directory run continued over several targets: its files are on the
  // first target (where the run directory is).
  json single = {{"state", "stopped"},
                 {"streams", json::array({stream(1, 0, 1, 1, "r/x.0000")})},
                 {"interfaces", json::array()}};
  const json m2 = merge_attempts(single, cur, 2);
  EXPECT_EQ(m2["targets"].size(), 2u);
  EXPECT_EQ(m2["streams"][0]["files"][0]["target"], 0);
  // Single directory before and after: nothing added.
  json cur1 = cur;
  cur1.erase("targets");
  cur1["streams"][0]["files"][0].erase("target");
  const json m3 = merge_attempts(single, cur1, 2);
  EXPECT_FALSE(m3.contains("targets"));
  EXPECT_FALSE(m3["streams"][0]["files"][0].contains("target"));
}

}  // namespace
}  // namespace rocecap::rundir
