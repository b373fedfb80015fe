// Several output targets (issue 12): placement balances bytes over the targets weighted by their
// free space; a target that fails (ENOSPC, EIO, a stalled write) is taken out of rotation and
// the data that did not reach it goes to a new file on another target, so nothing is lost while
// any target has room; a target that frees space comes back. The files of one stream, taken in
// the order the writer lists them, are always exactly the frames written, whatever target each
// one is on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "writer_test_util.hpp"
#include "writers/fault_injection.hpp"
#include "writers/output_targets.hpp"
#include "writers/pcap_writer.hpp"
#include "writers/raw_writer.hpp"
#include "writers/uring_queue.hpp"

namespace rocecap::writers {
namespace {

using test::Bytes;
namespace fs = std::filesystem;

constexpr std::size_t kHeader = 64, kData = 960, kFrame = kHeader + kData;

Bytes frame(uint32_t stream, uint32_t i) {
  return test::pattern(kFrame, stream * 1000003u + i);
}

struct Targets {
  std::vector<std::unique_ptr<test::TempDir>> dirs;
  std::shared_ptr<OutputTargets> set;
  std::map<std::size_t, std::vector<std::pair<std::size_t, std::string>>> events;

  explicit Targets(std::size_t n, TargetOptions o = {}) {
    std::vector<fs::path> paths;
    for (std::size_t i = 0; i < n; ++i) {
      dirs.push_back(std::make_unique<test::TempDir>());
      paths.push_back(dirs.back()->path());
    }
    make(paths, std::move(o));
  }
  Targets(std::vector<fs::path> paths, TargetOptions o) { make(paths, std::move(o)); }
  void make(const std::vector<fs::path>& paths, TargetOptions o) {
    set = std::make_shared<OutputTargets>(paths, std::move(o));
    set->set_observer([this](std::size_t t, TargetState s, const std::string& why) {
      events[t].emplace_back(static_cast<std::size_t>(s), why);
    });
  }
};

RotationOptions rotation(const Targets& t, uint64_t max_bytes, const std::string& stem,
                         std::size_t buffer = 4096) {
  RotationOptions o;
  o.max_bytes = max_bytes;
  o.buffer_bytes = buffer;
  o.targets = t.set;
  o.names = [stem](uint64_t seq) { return "run/" + stem + "." + std::to_string(seq); };
  o.retry.first = std::chrono::milliseconds(0);
  o.retry.max = std::chrono::milliseconds(0);
  return o;
}

Status put(RawWriter& w, uint32_t stream, uint32_t i) {
  const Bytes f = frame(stream, i);
  w.set_next_index(i);
  return w.write_frame(std::span<const std::byte, 64>(f.data(), 64),
                       std::span<const std::byte>(f).subspan(kHeader));
}

// The stream's files in the writer's order hold exactly the frames outside the write_error and
// storage_lost gaps.
void expect_whole(RawWriter& w, uint32_t stream, uint32_t total) {
  Bytes in_files, expected;
  std::vector<bool> lost(total, false);
  for (const WriteLoss* l : {&w.stats().write_loss, &w.stats().storage_loss})
    for (const auto& [first, count] : l->gaps)
      for (uint64_t i = first; i < first + count && i < total; ++i)
        lost[i] = true;
  for (uint32_t i = 0; i < total; ++i)
    if (!lost[i]) test::append(expected, frame(stream, i));
  uint64_t next = 0;
  for (const FileRecord& f : w.files()) {
    SCOPED_TRACE(f.path.string());
    const Bytes b = test::read_file(f.path);
    EXPECT_EQ(b.size(), f.bytes);
    EXPECT_EQ(b.size() % kFrame, 0u);
    EXPECT_EQ(f.records, b.size() / kFrame);
    if (f.records > 0) {
      EXPECT_GE(f.first_index, next) << "files out of frame order";
      next = f.first_index + f.records;
    }
    test::append(in_files, b);
  }
  EXPECT_TRUE(in_files == expected) << "files hold " << in_files.size() / kFrame
                                    << " frames, expected " << expected.size() / kFrame;
  EXPECT_EQ(w.stats().frames_written + w.stats().frames_dropped, total);
}

std::map<std::size_t, uint64_t> bytes_per_target(RawWriter& w) {
  std::map<std::size_t, uint64_t> out;
  for (const FileRecord& f : w.files())
    out[f.target] += f.bytes;
  return out;
}

TEST(OutputTargets, FourEqualTargetsTakeAQuarterOfTheBytesEachWithinOneFile) {
  TargetOptions o;
  o.free_bytes = [](const fs::path&) { return std::optional<uint64_t>(uint64_t{1} << 40); };
  Targets t(4, o);
  constexpr uint64_t kFile = 20 * kFrame;
  std::vector<RawWriter> writers;
  for (uint32_t s = 0; s < 3; ++s)
    writers.emplace_back(PathMaker{}, rotation(t, kFile, "s" + std::to_string(s)));
  constexpr uint32_t kFrames = 1000;
  for (uint32_t i = 0; i < kFrames; ++i)
    for (uint32_t s = 0; s < 3; ++s)
      ASSERT_TRUE(put(writers[s], s, i).ok());
  std::map<std::size_t, uint64_t> per_target;
  uint64_t total = 0;
  for (uint32_t s = 0; s < 3; ++s) {
    ASSERT_TRUE(writers[s].close().ok());
    expect_whole(writers[s], s, kFrames);
    for (const auto& [target, bytes] : bytes_per_target(writers[s])) {
      per_target[target] += bytes;
      total += bytes;
    }
  }
  ASSERT_EQ(per_target.size(), 4u);
  for (const auto& [target, bytes] : per_target) {
    EXPECT_NEAR(double(bytes), double(total) / 4, double(kFile)) << "target " << target;
  }
  const auto snap = t.set->snapshot();
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(snap[i].bytes_written, per_target[i]) << "target " << i;
    EXPECT_EQ(snap[i].state, TargetState::active);
    EXPECT_GT(snap[i].files, 0u);
  }
}

TEST(OutputTargets, BytesAreWeightedByFreeSpace) {
  std::map<std::string, uint64_t> free;
  TargetOptions o;
  o.free_bytes = [&free](const fs::path& p) { return std::optional<uint64_t>(free[p.string()]); };
  test::TempDir a, b;
  free[a.path().string()] = 100 << 20;
  free[b.path().string()] = 300 << 20;
  Targets t({a.path(), b.path()}, o);
  RawWriter w(PathMaker{}, rotation(t, 10 * kFrame, "s"));
  for (uint32_t i = 0; i < 2000; ++i)
    ASSERT_TRUE(put(w, 0, i).ok());
  ASSERT_TRUE(w.close().ok());
  expect_whole(w, 0, 2000);
  const auto per = bytes_per_target(w);
  // Three times the free space, three times the bytes (within one file): both fill together.
  EXPECT_NEAR(double(per.at(0)), 2000.0 * kFrame / 4, 10.0 * kFrame);
  EXPECT_NEAR(double(per.at(1)), 3 * 2000.0 * kFrame / 4, 10.0 * kFrame);
}

// Fault seam: writes to files under `g_fail_dir` fail with g_fail_errno once g_fail_after bytes
// went there.
std::string g_fail_dir;
int g_fail_errno = ENOSPC;
std::atomic<int64_t> g_fail_after{0};
int g_stall_ms = 0;
ssize_t failing_write(int fd, const void* data, std::size_t n) {
  char link[64], path[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t len = ::readlink(link, path, sizeof path - 1);
  if (len > 0 && std::string(path, std::size_t(len)).rfind(g_fail_dir, 0) == 0) {
    if (g_stall_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(g_stall_ms));
    if (g_fail_after.fetch_sub(int64_t(n)) < int64_t(n)) {
      errno = g_fail_errno;
      return -1;
    }
  }
  return ::write(fd, data, n);
}
struct Seam {
  Seam(const fs::path& dir, int err, int64_t after, int stall_ms = 0) {
    g_fail_dir = dir.string() + "/";
    g_fail_errno = err;
    g_fail_after = after;
    g_stall_ms = stall_ms;
    testing::set_write_function(failing_write);
  }
  ~Seam() { testing::set_write_function(nullptr); }
};

void spill_run(int err) {
  TargetOptions o;
  o.recover_bytes = uint64_t{1} << 40;  // the seam's "full" target never frees that much
  Targets t(3, o);
  // Frames straddle the 4096-byte staging buffers, so a failure cuts records already written.
  RawWriter w(PathMaker{}, rotation(t, 50 * kFrame, "s"));
  constexpr uint32_t kFrames = 600;
  std::size_t failing = 0;
  {
    Seam seam(fs::path("/nonexistent"), err, 0);
    for (uint32_t i = 0; i < kFrames; ++i) {
      if (i == 10) {  // by now a file is open on every target in turn: fail the one in use
        failing = w.files().back().target;
        g_fail_dir = t.set->directory(failing).string() + "/";
        g_fail_after = 3 * 4096;
      }
      ASSERT_TRUE(put(w, 0, i).ok()) << "frame " << i;
    }
    ASSERT_TRUE(w.close().ok());
  }
  expect_whole(w, 0, kFrames);
  EXPECT_EQ(w.stats().frames_dropped, 0u) << "a frame was lost while two targets had room";
  EXPECT_EQ(w.stats().write_errors, 0u);
  EXPECT_GE(w.stats().spills, 1u);
  const auto snap = t.set->snapshot();
  EXPECT_EQ(snap[failing].state, err == ENOSPC ? TargetState::full : TargetState::failed);
  EXPECT_EQ(snap[failing].out_of_rotation, 1u);
  ASSERT_EQ(t.events[failing].size(), 1u) << "taken out of rotation once, reported once";
  EXPECT_NE(t.events[failing][0].second.find(t.set->directory(failing).string()),
            std::string::npos);
  for (const FileRecord& f : w.files()) {
    if (f.target == failing) {
      EXPECT_TRUE(f.failed || f.bytes > 0);
    }
  }
  // Nothing new went to the failing target after it failed.
  bool after = false;
  for (const FileRecord& f : w.files()) {
    if (f.failed) {
      after = true;
    } else if (after) {
      EXPECT_NE(f.target, failing) << f.path;
    }
  }
}

TEST(OutputTargets, EnospcOnOneTargetSpillsToAnotherAndLosesNothing) {
  spill_run(ENOSPC);
}
TEST(OutputTargets, EioOnOneTargetMidRunSpillsAndTheRunGoesOn) {
  spill_run(EIO);
}

// Disk seam with short writes: files under a listed directory take that many more bytes, the
// write that reaches the limit is short, the next one fails with ENOSPC. What Linux does on a
// filesystem filling mid-write: generic_perform_write (mm/filemap.c) returns the bytes copied
// before the failing page when there are any, the error only when none; strace of rocecapd on a
// full tmpfs showed exactly that (writev 466944 of ~1 MB, then ENOSPC).
std::map<std::string, int64_t> g_room;
ssize_t short_write(int fd, const void* data, std::size_t n) {
  char link[64], path[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t len = ::readlink(link, path, sizeof path - 1);
  for (auto& [dir, left] : g_room) {
    if (len <= 0 || std::string(path, std::size_t(len)).rfind(dir, 0) != 0) continue;
    if (left <= 0) {
      errno = ENOSPC;
      return -1;
    }
    const ssize_t w = ::write(fd, data, std::min<std::size_t>(n, std::size_t(left)));
    if (w > 0) left -= w;
    return w;
  }
  return ::write(fd, data, n);
}

// Records cut from a failed file move to a new file on another target; when that target fills
// in the middle of them, the whole records that reached it stay there: a version that moved
// the cut as one run of records cut the new file back to its start and lost them all, with the
// disk's room left empty (integration_rocecapd_targets_spill on the last target with room).
TEST(OutputTargets, AShortWriteInMovedRecordsKeepsTheWholeRecordsThatReachedTheDisk) {
  TargetOptions o;
  o.recover_bytes = uint64_t{1} << 40;
  Targets t(2, o);
  RawWriter w(PathMaker{}, rotation(t, 1000 * kFrame, "s", 64 << 10));  // 64 frames staged
  ASSERT_TRUE(put(w, 0, 0).ok());  // opens the first file; the frame waits in the staging buffer
  const std::size_t first = w.files().back().target, other = 1 - first;
  g_room = {{t.set->directory(first).string() + "/", 0},
            {t.set->directory(other).string() + "/", 20 * kFrame + 500}};
  testing::set_write_function(short_write);
  constexpr uint32_t kFrames = 100;
  for (uint32_t i = 1; i < kFrames; ++i)
    (void)put(w, 0, i);
  (void)w.close();
  testing::set_write_function(nullptr);
  g_room.clear();
  expect_whole(w, 0, kFrames);
  EXPECT_EQ(w.stats().frames_written, 20u)
      << "the 20 whole records the second target took were cut again";
  ASSERT_FALSE(w.stats().write_loss.gaps.empty());
  EXPECT_EQ(w.stats().write_loss.gaps.front().first, 20u);
  uint64_t on_other = 0;
  for (const FileRecord& f : w.files())
    if (f.target == other) on_other += f.records;
  EXPECT_EQ(on_other, 20u);
  EXPECT_EQ(t.set->snapshot()[other].state, TargetState::full);
}

// Real ENOSPC: three tmpfs of unequal size fill one after another; nothing is lost until the
// last is full; then frames are counted lost with their indices; freeing space brings a
// target back and writing resumes there.
TEST(OutputTargets, UnequalTmpfsTargetsFillBeforeAnyFrameIsLost) {
  test::TempMount a("tmpfs", "size=256k"), b("tmpfs", "size=512k"), c("tmpfs", "size=1m");
  if (!a.ok()) GTEST_SKIP() << a.why();
  TargetOptions o;
  o.recover_bytes = 128 << 10;
  Targets t({a.path(), b.path(), c.path()}, o);
  RawWriter w(PathMaker{}, rotation(t, 40 * kFrame, "s"));
  constexpr uint32_t kFrames = 2400;  // 2.4 MB for 1.75 MiB of targets
  uint32_t first_lost = kFrames;
  for (uint32_t i = 0; i < kFrames; ++i) {
    (void)put(w, 0, i);
    if (w.stats().frames_dropped > 0 && first_lost == kFrames) first_lost = i;
  }
  for (const auto& s : t.set->snapshot()) {
    EXPECT_EQ(s.state, TargetState::full) << s.directory;
    EXPECT_LT(s.free_bytes, 3 * 4096 + kFrame) << s.directory << ": lost frames while it had room";
  }
  ASSERT_GT(w.stats().frames_dropped, 0u);
  EXPECT_GT(first_lost, 1500u);
  EXPECT_EQ(w.stats().write_loss.gaps.front().first, w.stats().frames_written)
      << "the first frame lost follows every frame written";
  // Space comes back on the smallest target: it re-enters rotation and takes the next frames.
  for (const FileRecord& f : w.files())
    if (f.target == 0) fs::remove(f.path);
  const uint64_t written = w.stats().frames_written;
  for (uint32_t i = kFrames; i < kFrames + 50; ++i)
    (void)put(w, 0, i);
  EXPECT_GT(w.stats().frames_written, written) << "writing did not resume on the freed target";
  EXPECT_EQ(t.set->snapshot()[0].state, TargetState::active);
  (void)w.close();
}

TEST(OutputTargets, AStalledWriteTakesTheTargetOutOfRotation) {
  TargetOptions o;
  o.stall = std::chrono::milliseconds(20);
  Targets t(2, o);
  RawWriter w(PathMaker{}, rotation(t, 8 * kFrame, "s"));
  {
    Seam seam(t.dirs[0]->path(), 0, int64_t{1} << 40, 50);  // slow, never failing
    for (uint32_t i = 0; i < 100; ++i)
      ASSERT_TRUE(put(w, 0, i).ok());
  }
  ASSERT_TRUE(w.close().ok());
  expect_whole(w, 0, 100);
  const auto snap = t.set->snapshot();
  EXPECT_EQ(snap[0].state, TargetState::failed);
  EXPECT_NE(snap[0].reason.find("stall"), std::string::npos) << snap[0].reason;
  EXPECT_GE(snap[0].max_write_ns, 50'000'000u);
  uint64_t on_0 = 0;
  for (const FileRecord& f : w.files())
    on_0 += f.target == 0 ? f.records : 0;
  EXPECT_LE(on_0, 8u) << "the stalled target kept getting files";
}

TEST(OutputTargets, OneTargetKeepsTheSingleDirectoryBehaviour) {
  Targets t(1);
  RawWriter w(PathMaker{}, rotation(t, 20 * kFrame, "s"));
  {
    Seam seam(t.dirs[0]->path(), ENOSPC, 8 * 4096);
    for (uint32_t i = 0; i < 100; ++i)
      (void)put(w, 0, i);
  }
  (void)w.close();
  EXPECT_GT(w.stats().write_errors, 0u);
  EXPECT_EQ(w.stats().spills, 0u);
  EXPECT_EQ(t.set->snapshot()[0].state, TargetState::active) << "the only target stays in";
  expect_whole(w, 0, 100);
}

// A target whose writes take far longer than the others' (but not past the stall bound)
// gets fewer new files, and still some.
TEST(OutputTargets, ATargetFallingBehindGetsFewerFiles) {
  TargetOptions o;
  o.free_bytes = [](const fs::path&) { return std::optional<uint64_t>(uint64_t{1} << 40); };
  o.slow_floor = std::chrono::milliseconds(5);
  Targets t(2, o);
  RawWriter w(PathMaker{}, rotation(t, 8 * kFrame, "s"));
  {
    Seam seam(t.dirs[0]->path(), 0, int64_t{1} << 40, 30);  // 30 ms per write, never failing
    for (uint32_t i = 0; i < 400; ++i)
      ASSERT_TRUE(put(w, 0, i).ok());
  }
  ASSERT_TRUE(w.close().ok());
  expect_whole(w, 0, 400);
  const auto per = bytes_per_target(w);
  EXPECT_GT(per.at(0), 0u) << "the slow target got no file at all";
  EXPECT_LT(double(per.at(0)), 0.25 * 400 * kFrame) << "the slow target kept its half";
  EXPECT_EQ(t.set->snapshot()[0].state, TargetState::active) << "slow is not stalled";
}

uint64_t monotonic_ns_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// Places `files` rotation files of 64 MiB (each closed whole at once); how many went where.
std::vector<int> place_files(OutputTargets& set, int files) {
  std::vector<int> per(set.size(), 0);
  for (int i = 0; i < files; ++i) {
    const auto t = set.place(64 << 20);
    if (!t) break;
    ++per[*t];
    set.file_closed(*t, 64 << 20, 64 << 20);
  }
  return per;
}

// Backlog (writers/write_backlog.hpp): of two equal targets, the one with a write in flight for
// 100 ms (no write completed anywhere, so no latency is known) gets fewer new files, still some;
// once the write completed it takes files again until it has caught up with its share.
TEST(OutputTargets, ABackloggedTargetGetsFewerNewFilesThanAnEqualIdleOne) {
  TargetOptions o;
  o.free_bytes = [](const fs::path&) { return std::optional<uint64_t>(uint64_t{1} << 40); };
  Targets t(2, o);  // slow_floor 20 ms
  const uint64_t start = monotonic_ns_now();
  t.set->backlog(0)->begin(1 << 20, start);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto snap = t.set->snapshot();
  EXPECT_EQ(snap[0].backlog_bytes, 1u << 20);
  EXPECT_EQ(snap[1].backlog_bytes, 0u);
  const std::vector<int> behind = place_files(*t.set, 40);
  EXPECT_GE(behind[0], 1) << "a backlogged target still gets some files";
  EXPECT_LE(behind[0], 40 / 4) << "the backlogged target kept its half: " << behind[0];
  t.set->backlog(0)->end(1 << 20, start);
  EXPECT_EQ(t.set->snapshot()[0].backlog_bytes, 0u);
  const std::vector<int> after = place_files(*t.set, 40);
  EXPECT_GE(after[0], 20) << "the target did not catch up once its write completed";
  EXPECT_LE(std::abs((behind[0] + after[0]) - (behind[1] + after[1])), 1);
}

// The real write paths feed the backlog: a write() in progress is counted on its target (seen
// from inside the write), and nothing stays counted once the files are closed.
OutputTargets* g_backlog_targets = nullptr;
std::vector<uint64_t> g_backlog_seen;
ssize_t backlog_seen_write(int fd, const void* data, std::size_t n) {
  uint64_t all = 0;
  for (const auto& s : g_backlog_targets->snapshot())
    all += s.backlog_bytes;
  g_backlog_seen.push_back(all);
  return ::write(fd, data, n);
}

TEST(OutputTargets, WritesInFlightAreTheTargetsBacklogUntilTheyComplete) {
  Targets t(2);
  RawWriter w(PathMaker{}, rotation(t, 20 * kFrame, "s"));
  g_backlog_targets = t.set.get();
  g_backlog_seen.clear();
  testing::set_write_function(backlog_seen_write);
  for (uint32_t i = 0; i < 100; ++i)
    ASSERT_TRUE(put(w, 0, i).ok());
  ASSERT_TRUE(w.close().ok());
  testing::set_write_function(nullptr);
  ASSERT_FALSE(g_backlog_seen.empty());
  for (uint64_t b : g_backlog_seen)
    EXPECT_GT(b, 0u) << "a write in progress was not in its target's backlog";
  for (const auto& s : t.set->snapshot())
    EXPECT_EQ(s.backlog_bytes, 0u) << s.directory;
  expect_whole(w, 0, 100);
}

// A file deleted under the writer on one of several targets: reported, its frames counted lost
// (storage_lost gaps: written, then lost with the storage), the file listed as lost, the target
// lost (failed), and the stream goes on on another target.
TEST(OutputTargets, AFileDeletedOnOneTargetIsCountedLostAndTheStreamMovesOn) {
  Targets t(2);
  RawWriter w(PathMaker{}, rotation(t, 1000 * kFrame, "s"));
  for (uint32_t i = 0; i < 30; ++i)
    ASSERT_TRUE(put(w, 0, i).ok());
  const FileRecord first = w.files().back();
  fs::remove(first.path);
  const Status s = w.check_storage();
  EXPECT_EQ(s.code(), ENOENT);
  for (uint32_t i = 30; i < 60; ++i)
    ASSERT_TRUE(put(w, 0, i).ok());
  ASSERT_TRUE(w.close().ok());
  EXPECT_EQ(w.stats().frames_dropped, 30u);
  EXPECT_TRUE(w.stats().write_loss.gaps.empty());
  ASSERT_EQ(w.stats().storage_loss.gaps.size(), 1u);
  EXPECT_EQ(w.stats().storage_loss.gaps[0], (std::pair<uint64_t, uint64_t>{0, 30}));
  EXPECT_EQ(w.stats().storage_loss.frames, 30u);
  ASSERT_EQ(w.files().size(), 1u);
  EXPECT_NE(w.files()[0].target, first.target);
  EXPECT_EQ(w.files()[0].first_index, 30u);
  ASSERT_EQ(w.lost_files().size(), 1u);
  EXPECT_EQ(w.lost_files()[0].path, first.path);
  EXPECT_NE(w.lost_files()[0].lost.find("deleted"), std::string::npos) << w.lost_files()[0].lost;
  EXPECT_EQ(t.set->snapshot()[first.target].state, TargetState::failed);
  EXPECT_TRUE(t.set->snapshot()[first.target].lost);
  expect_whole(w, 0, 60);
}

// Issue 23, items 7 and 8, at the writer: a target's run directory removed, or the target's
// path naming another directory (as after umount -l: the mount point's own, empty directory).
// The target is lost at the next identity check; every file of the writer that was on it,
// closed ones included, leaves files() for lost_files(), its frames counted storage_lost;
// the stream goes on on the other target; nothing is created under the target's path again.
struct LostTargetRun {
  TargetOptions options() {
    TargetOptions o;
    o.run_directory = "run";
    return o;
  }
  Targets t{2, options()};
  RawWriter w{PathMaker{}, rotation(t, 10 * kFrame, "s")};
  void put_frames(uint32_t from, uint32_t to) {
    for (uint32_t i = from; i < to; ++i)
      ASSERT_TRUE(put(w, 0, i).ok()) << i;
  }
  uint64_t frames_on(std::size_t target) {
    uint64_t n = 0;
    for (const FileRecord& f : w.files())
      n += f.target == target ? f.records : 0;
    return n;
  }
};

void expect_lost_with_target(LostTargetRun& r, uint64_t lost_frames, const std::string& why) {
  EXPECT_GT(lost_frames, 0u) << "nothing was on target 1: the test proves nothing";
  const Status s = r.w.check_storage();
  EXPECT_EQ(s.code(), ENOENT);
  EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  EXPECT_EQ(r.frames_on(1), 0u) << "a file of the lost target is still listed";
  uint64_t in_lost = 0;
  for (const FileRecord& f : r.w.lost_files()) {
    EXPECT_EQ(f.target, 1u) << f.path;
    EXPECT_NE(f.lost.find(why), std::string::npos) << f.lost;
    in_lost += f.records;
  }
  EXPECT_EQ(in_lost, lost_frames);
  EXPECT_EQ(r.w.stats().storage_loss.frames, lost_frames);
  EXPECT_TRUE(r.w.check_storage().ok()) << "reported once";
  const TargetSnapshot t1 = r.t.set->snapshot()[1];
  EXPECT_EQ(t1.state, TargetState::failed);
  EXPECT_TRUE(t1.lost);
  EXPECT_NE(t1.reason.find(why), std::string::npos) << t1.reason;
}

TEST(OutputTargets, ClosedFilesOnATargetWhoseRunDirectoryWasRemovedAreCountedLost) {
  LostTargetRun r;
  r.put_frames(0, 100);
  const uint64_t on_1 = r.frames_on(1);
  fs::remove_all(r.t.dirs[1]->path() / "run");
  EXPECT_EQ(r.t.set->check_identity(), 1u);
  EXPECT_EQ(r.t.set->check_identity(), 0u) << "lost once";
  expect_lost_with_target(r, on_1, "was removed");
  r.put_frames(100, 200);
  ASSERT_TRUE(r.w.close().ok());
  EXPECT_EQ(r.frames_on(0), 200 - on_1);
  EXPECT_FALSE(fs::exists(r.t.dirs[1]->path() / "run")) << "the removed run directory came back";
  expect_whole(r.w, 0, 200);
}

TEST(OutputTargets, ATargetWhosePathNamesAnotherDirectoryIsLostAndNeverWrittenThrough) {
  LostTargetRun r;
  r.put_frames(0, 100);
  const uint64_t on_1 = r.frames_on(1);
  // What umount -l leaves: the path now names another (empty) directory; the one written to
  // is still open, reachable only through the descriptors held.
  const fs::path dir = r.t.dirs[1]->path();
  fs::rename(dir, dir.string() + ".detached");
  fs::create_directory(dir);
  // No check yet: the next file placed there finds it changed at its open.
  r.put_frames(100, 200);
  EXPECT_TRUE(r.t.set->lost(1));
  EXPECT_TRUE(fs::is_empty(dir)) << "a file went through the target's path";
  expect_lost_with_target(r, on_1, "was replaced");
  ASSERT_TRUE(r.w.close().ok());
  expect_whole(r.w, 0, 200);
  fs::remove_all(dir.string() + ".detached");
}

// Descriptors of this process on the file system `dev` (what each fd names, followed).
std::size_t fds_on(dev_t dev) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    struct stat st {};
    if (::stat(e.path().c_str(), &st) == 0 && st.st_dev == dev) ++n;
  }
  return n;
}

// A target lost with its file system (umount -l): a detached file system lives on while
// anything holds it, so nothing may. Not OutputTargets' two directories of it (target and run
// directory, counted before the writer starts), and not the directory the writer keeps of each
// file system its files were opened on without fsync_rotated, to sync it once at close(). The
// other target's directory stays held for that final sync.
TEST(OutputTargets, ALostTargetsFileSystemIsLetGoAndTheOtherIsStillSyncedAtClose) {
  test::TempMount a("tmpfs", "size=4m"), b("tmpfs", "size=4m");
  if (!a.ok()) GTEST_SKIP() << a.why();
  TargetOptions o;
  o.run_directory = "run";
  Targets t({a.path(), b.path()}, o);
  struct stat sa {
  }, sb{};
  ASSERT_EQ(::stat(a.path().c_str(), &sa), 0);
  ASSERT_EQ(::stat(b.path().c_str(), &sb), 0);
  const std::size_t targets_a = fds_on(sa.st_dev), targets_b = fds_on(sb.st_dev);
  RotationOptions ro = rotation(t, 10 * kFrame, "s");
  ro.fsync_rotated = false;
  RawWriter w(PathMaker{}, ro);
  for (uint32_t i = 0; i < 100; ++i)
    ASSERT_TRUE(put(w, 0, i).ok()) << i;
  uint64_t on_b = 0;
  for (const FileRecord& f : w.files())
    on_b += f.target == 1 ? f.records : 0;
  ASSERT_GT(on_b, 0u) << "nothing was on target 1: the test proves nothing";
  ASSERT_GT(fds_on(sb.st_dev), targets_b) << "the writer holds nothing on target 1";
  ASSERT_EQ(::umount2(b.path().c_str(), MNT_DETACH), 0) << std::strerror(errno);
  EXPECT_EQ(t.set->check_identity(), 1u);
  EXPECT_EQ(w.check_storage().code(), ENOENT);
  EXPECT_EQ(w.stats().storage_loss.frames, on_b);
  EXPECT_EQ(targets_b, 2u);
  EXPECT_EQ(fds_on(sb.st_dev), 0u) << "the unmounted file system is still held";
  for (uint32_t i = 100; i < 200; ++i)
    ASSERT_TRUE(put(w, 0, i).ok()) << i;
  EXPECT_GT(fds_on(sa.st_dev), targets_a);
  ASSERT_TRUE(w.close().ok());
  EXPECT_EQ(fds_on(sa.st_dev), targets_a) << "target 0's directory outlived the final sync";
  expect_whole(w, 0, 200);
}

// Issue 23, item 10: a target given as unavailable (a restart could not read it for recovery)
// is out of rotation from the start and never created, opened nor written to.
TEST(OutputTargets, AnUnavailableTargetIsNeverCreatedNorWritten) {
  test::TempDir base;
  TargetOptions o;
  o.run_directory = "run";
  o.unavailable = {"", "could not be read for recovery"};
  const fs::path missing = base.path() / "moved-away";
  fs::create_directory(base.path() / "t0");
  Targets t({base.path() / "t0", missing}, o);
  RawWriter w(PathMaker{}, rotation(t, 10 * kFrame, "s"));
  for (uint32_t i = 0; i < 50; ++i)
    ASSERT_TRUE(put(w, 0, i).ok());
  ASSERT_TRUE(w.close().ok());
  EXPECT_FALSE(fs::exists(missing)) << "the unavailable target was created";
  const TargetSnapshot s = t.set->snapshot()[1];
  EXPECT_EQ(s.state, TargetState::failed);
  EXPECT_EQ(s.out_of_rotation, 1u);
  EXPECT_EQ(s.reason, "could not be read for recovery");
  EXPECT_EQ(w.stats().spills, 0u);
  expect_whole(w, 0, 50);
}

// ROCECAP_FAULT_EIO's seam (writers/fault_injection.hpp), installed as rocecapd installs it:
// the middle one of three targets answers EIO once `after_bytes` were written there (or at its
// (after_files+1)th open), on each write path (write(), an io_uring completion, writev). The
// stream's files still hold every frame, the target is failed once with the injected reason.
struct FaultInstalled {
  explicit FaultInstalled(const fault::Spec& s) { fault::install(s); }
  ~FaultInstalled() { fault::clear(); }
  FaultInstalled(const FaultInstalled&) = delete;
  FaultInstalled& operator=(const FaultInstalled&) = delete;
};

void injected_eio_run(WritePath path, std::optional<uint64_t> after_bytes,
                      std::optional<uint64_t> after_files) {
  Targets t(3);
  RotationOptions o = rotation(t, 50 * kFrame, "s");
  o.output.direct = path != WritePath::gather_writev;
  o.io_uring = path == WritePath::copy_uring;
  RawWriter w(PathMaker{}, o);
  const bool gather = path == WritePath::gather_writev;
  if (gather) w.borrow_payloads();
  fault::Spec spec;
  spec.directory = t.set->directory(1);
  spec.after_bytes = after_bytes;
  spec.after_files = after_files;
  constexpr uint32_t kFrames = 600;
  {
    FaultInstalled installed(spec);
    for (uint32_t i = 0; i < kFrames; ++i) {
      const Bytes f = frame(0, i);  // borrowed (gather): alive until flushed
      w.set_next_index(i);
      ASSERT_TRUE(w.write_frame(std::span<const std::byte, 64>(f.data(), 64),
                                std::span<const std::byte>(f).subspan(kHeader))
                      .ok())
          << "frame " << i;
      if (gather) {
        ASSERT_TRUE(w.flush_borrowed().ok()) << "frame " << i;
      }
    }
    ASSERT_TRUE(w.close().ok());
  }
  if (!gather && !w.files().front().direct) GTEST_SKIP() << "no O_DIRECT on the temp directory";
  EXPECT_STREQ(to_string(w.output().write_path()), to_string(path));
  expect_whole(w, 0, kFrames);
  EXPECT_EQ(w.stats().frames_dropped, 0u) << "a frame was lost while two targets had room";
  EXPECT_EQ(w.stats().write_errors, 0u);
  const auto snap = t.set->snapshot();
  EXPECT_EQ(snap[1].state, TargetState::failed);
  EXPECT_EQ(snap[1].out_of_rotation, 1u);
  EXPECT_NE(snap[1].reason.find("Input/output error (injected: ROCECAP_FAULT_EIO)"),
            std::string::npos)
      << snap[1].reason;
  EXPECT_EQ(snap[0].state, TargetState::active);
  EXPECT_EQ(snap[2].state, TargetState::active);
  for (const auto& s : snap)
    EXPECT_EQ(s.backlog_bytes, 0u) << s.directory << ": writes of closed files still counted";
  const auto per = bytes_per_target(w);
  EXPECT_GT(per.count(1) ? per.at(1) : 0, 0u) << "the target failed before taking any frame";
  if (after_bytes) {
    EXPECT_LE(per.at(1), *after_bytes) << "more bytes stayed on it than the seam let through";
    EXPECT_GE(w.stats().spills, 1u);
  }
  // After the failure nothing new went there.
  bool after = false;
  for (const FileRecord& f : w.files()) {
    if (after) {
      EXPECT_NE(f.target, 1u) << f.path;
    }
    after = after || (f.target == 1 && f.failed);
  }
}

TEST(FaultInjection, InjectedEioMidRunOnTheWritePathSpillsAndLosesNothing) {
  injected_eio_run(WritePath::copy_write, 40 << 10, std::nullopt);
}
TEST(FaultInjection, InjectedEioMidRunOnTheIoUringPathSpillsAndLosesNothing) {
  if (!probe_io_engine().uring) GTEST_SKIP() << probe_io_engine().reason;
  injected_eio_run(WritePath::copy_uring, 40 << 10, std::nullopt);
}
TEST(FaultInjection, InjectedEioMidRunOnTheWritevPathSpillsAndLosesNothing) {
  injected_eio_run(WritePath::gather_writev, 40 << 10, std::nullopt);
}
TEST(FaultInjection, InjectedEioAtTheSecondOpenTakesTheTargetOut) {
  injected_eio_run(WritePath::gather_writev, std::nullopt, 1);
}

// A pcap file whose very first write fails: the records cut are moved to a file on another
// target, but not the failed file's pcap header (moved along, it sat in the new file as a
// garbage record: the O_DIRECT run of integration_rocecapd_targets_eio_direct). Every file
// left is a pcap header followed by exactly the records listed, timestamps in order.
void pcap_first_write_fails(bool direct) {
  Targets t(3);
  RotationOptions o = rotation(t, 20 * 1040, "p");
  o.output.direct = direct;
  PcapWriter w(PathMaker{}, o);
  fault::Spec spec;
  spec.directory = t.set->directory(1);
  spec.after_bytes = 0;  // the first write there fails
  constexpr uint32_t kPackets = 200;
  {
    FaultInstalled installed(spec);
    for (uint32_t i = 0; i < kPackets; ++i) {
      const Bytes p = test::pattern(1000, i);
      w.set_next_index(i);
      ASSERT_TRUE(w.write_packet(int64_t{1'000'000'000} + i, p).ok()) << i;
    }
    ASSERT_TRUE(w.close().ok());
  }
  EXPECT_EQ(t.set->snapshot()[1].state, TargetState::failed);
  EXPECT_GE(w.stats().spills, 1u);
  uint64_t records = 0, next_ns = 1'000'000'000;
  for (const FileRecord& f : w.files()) {
    SCOPED_TRACE(f.path.string());
    const Bytes b = test::read_file(f.path);
    ASSERT_GE(b.size(), kPcapFileHeaderBytes);
    uint32_t magic = 0;
    std::memcpy(&magic, b.data(), 4);
    EXPECT_EQ(magic, kPcapMagicNs);
    std::size_t at = kPcapFileHeaderBytes;
    uint64_t in_file = 0;
    while (at + kPcapRecordHeaderBytes <= b.size()) {
      uint32_t h[4];
      std::memcpy(h, b.data() + at, sizeof h);
      const uint64_t ns = uint64_t{h[0]} * 1'000'000'000u + h[1];
      ASSERT_EQ(ns, next_ns) << "record " << in_file << " at byte " << at;
      ASSERT_EQ(h[2], 1000u);
      ++next_ns;
      ++in_file;
      at += kPcapRecordHeaderBytes + h[2];
    }
    EXPECT_EQ(at, b.size());
    EXPECT_EQ(in_file, f.records);
    records += in_file;
  }
  EXPECT_EQ(records, kPackets) << "records lost or garbled";
}

TEST(FaultInjection, APcapFileWhoseFirstWriteFailsMovesItsRecordsWithoutItsHeader) {
  pcap_first_write_fails(false);
}
TEST(FaultInjection, APcapFileWhoseFirstDirectWriteFailsMovesItsRecordsWithoutItsHeader) {
  pcap_first_write_fails(true);
}

TEST(FaultInjection, ParsesTheEnvironmentValueAndRefusesBadOnes) {
  std::string error;
  auto s = fault::parse("after_bytes=8388608:/data/disk2/", error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->directory, fs::path("/data/disk2/"));
  EXPECT_EQ(s->after_bytes, 8388608u);
  EXPECT_FALSE(s->after_files);
  s = fault::parse("after_files=3,after_bytes=0:/a:b", error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(s->directory, fs::path("/a:b"));
  EXPECT_EQ(s->after_files, 3u);
  EXPECT_EQ(s->after_bytes, 0u);
  EXPECT_NE(fault::describe(*s).find("/a:b"), std::string::npos);
  for (const char* bad : {"", "/data", "after_bytes=8:data", "after_bytes=:/d", "after_bytes=-1:/d",
                          "after_bytes=1x:/d", "after_bites=1:/d", ":/d", "after_bytes:/d"}) {
    error.clear();
    EXPECT_FALSE(fault::parse(bad, error)) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(FaultInjection, NotInstalledNothingIsCovered) {
  test::TempDir d;
  fault::Spec spec;
  spec.directory = d.path();
  spec.after_bytes = 0;
  {
    FaultInstalled installed(spec);
    EXPECT_TRUE(fault::covers(d.path() / "run" / "x.raw"));
    EXPECT_FALSE(fault::covers(d.path().string() + "2/x.raw")) << "a sibling with the same prefix";
  }
  EXPECT_FALSE(fault::covers(d.path() / "run" / "x.raw"));
}

}  // namespace
}  // namespace rocecap::writers
