#include "daemon/lib/reporting/manifest_writer.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "daemon/lib/reporting/manifest_file.hpp"

namespace rocecap::daemon {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

Manifest named(const std::string& run) {
  Manifest m;
  m.run = run;
  m.state = "running";
  return m;
}

// A write that takes as long as the test says (a disk flushing its cache under the run's
// writes): it records the snapshot's name, tells the test it has begun, and waits for release.
struct SlowDisk {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::string> written;
  int begun = 0;
  bool released = false;

  ManifestWriter::Write write() {
    return [this](const Manifest& m) {
      std::unique_lock lock(mutex);
      ++begun;
      cv.notify_all();
      cv.wait(lock, [this] { return released; });
      written.push_back(m.run);
      return std::string();
    };
  }
  bool wait_begun(int n) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, 10s, [&] { return begun >= n; });
  }
  void release() {
    const std::lock_guard lock(mutex);
    released = true;
    cv.notify_all();
  }
};

struct ReleaseAtExit {
  SlowDisk& disk;
  ~ReleaseAtExit() { disk.release(); }
};

bool finishes(std::future<void>& f) {
  return f.wait_for(10s) == std::future_status::ready;
}

TEST(ManifestWriter, PostReturnsWhileAWriteWaitsOnTheDiskAndOnlyTheNewestWaitingIsWritten) {
  SlowDisk disk;
  ManifestWriter w(disk.write());
  std::future<void> first, more;
  const ReleaseAtExit release{disk};  // before the futures wait, whatever fails
  // The writer thread's side: posting must not wait for the disk, neither the write it starts
  // nor one still in progress.
  first = std::async(std::launch::async, [&] { w.post(named("a")); });
  ASSERT_TRUE(finishes(first)) << "post() waited for its own write";
  ASSERT_TRUE(disk.wait_begun(1));
  more = std::async(std::launch::async, [&] {
    w.post(named("b"));
    w.post(named("c"));
  });
  ASSERT_TRUE(finishes(more)) << "post() waited for the write in progress";
  disk.release();
  for (int i = 0; i < 1000 && w.counts().written < 2; ++i)
    std::this_thread::sleep_for(10ms);
  w.stop();
  EXPECT_EQ(disk.written, (std::vector<std::string>{"a", "c"}));
  const ManifestWriter::Counts c = w.counts();
  EXPECT_EQ(c.posted, 3u);
  EXPECT_EQ(c.written, 2u);
  EXPECT_EQ(c.superseded, 1u);
  EXPECT_EQ(c.failed, 0u);
}

TEST(ManifestWriter, StopFinishesTheWriteInProgressAndDropsTheOneWaiting) {
  SlowDisk disk;
  ManifestWriter w(disk.write());
  w.post(named("a"));
  ASSERT_TRUE(disk.wait_begun(1));
  w.post(named("b"));
  auto stopped = std::async(std::launch::async, [&] { w.stop(); });
  EXPECT_EQ(stopped.wait_for(100ms), std::future_status::timeout)
      << "stop() returned while a write was still using the file";
  disk.release();
  ASSERT_TRUE(finishes(stopped));
  EXPECT_EQ(disk.written, std::vector<std::string>{"a"});
  EXPECT_EQ(w.counts().superseded, 1u);
  w.post(named("late"));  // after stop: not written, counted
  EXPECT_EQ(disk.written, std::vector<std::string>{"a"});
  EXPECT_EQ(w.counts().superseded, 2u);
  EXPECT_EQ(w.counts().posted, 3u) << "posted = written + failed + superseded once stopped";
}

TEST(ManifestWriter, CountsAFailedWrite) {
  ManifestWriter w([](const Manifest&) { return std::string("disk full"); });
  w.post(named("a"));
  for (int i = 0; i < 1000 && w.counts().failed == 0; ++i)
    std::this_thread::sleep_for(10ms);
  w.stop();
  EXPECT_EQ(w.counts().failed, 1u);
  EXPECT_EQ(w.counts().written, 0u);
}

TEST(ManifestWriter, WritesTheRunsManifestFile) {
  const fs::path dir = fs::temp_directory_path() / ("rocecap_mw_" + std::to_string(getpid()));
  fs::create_directories(dir);
  {
    ManifestFile file(dir, 4096);
    ManifestWriter w([&](const Manifest& m) { return file.write(m, false); });
    w.post(named("r7"));
    for (int i = 0; i < 1000 && w.counts().written == 0; ++i)
      std::this_thread::sleep_for(10ms);
    w.stop();
    ASSERT_EQ(w.counts().written, 1u);
  }
  std::ifstream in(dir / "manifest.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("run"), "r7");
  EXPECT_EQ(j.at("state"), "running");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rocecap::daemon
