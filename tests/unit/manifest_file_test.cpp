#include "daemon/lib/reporting/manifest_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rocecap::daemon {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("rocecap_mf_" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

Manifest sample() {
  Manifest m;
  m.run = "r1";
  m.state = "running";
  return m;
}

TEST(ManifestFile, HoldsARealReserveForTheRunAndGivesItBack) {
  TempDir dir;
  const fs::path reserve = dir.path / ".manifest-reserve";
  {
    ManifestFile f(dir.path, 256 * 1024);
    ASSERT_TRUE(f.reserve_held());
    struct stat st {};
    ASSERT_EQ(stat(reserve.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 256 * 1024);
    EXPECT_GE(st.st_blocks * 512, 256 * 1024) << "the reserve must own its blocks, not be sparse";
    EXPECT_EQ(f.write(sample(), false), "");
    EXPECT_TRUE(f.reserve_held()) << "a write that succeeds keeps the reserve";
    EXPECT_EQ(f.path(), dir.path / "manifest.json");
  }
  EXPECT_FALSE(fs::exists(reserve));
  EXPECT_TRUE(fs::exists(dir.path / "manifest.json"));
}

TEST(ManifestFile, AStaleReserveOfAKilledRunIsReused) {
  TempDir dir;
  std::ofstream(dir.path / ".manifest-reserve") << "left behind";
  ManifestFile f(dir.path, 4096);
  EXPECT_TRUE(f.reserve_held());
}

TEST(ManifestFile, AFailingFinalWriteSpendsTheReserveAndReportsTheError) {
  TempDir dir;
  ManifestFile f(dir.path, 4096);
  ASSERT_TRUE(f.reserve_held());
  fs::create_directory(dir.path / "manifest.json.tmp");  // the temporary cannot be created
  EXPECT_NE(f.write(sample(), false), "");
  EXPECT_TRUE(f.reserve_held()) << "periodic writes never spend the reserve";
  const std::string err = f.write(sample(), true);
  EXPECT_NE(err.find("manifest.json.tmp"), std::string::npos) << err;
  EXPECT_FALSE(f.reserve_held());
  EXPECT_FALSE(fs::exists(dir.path / ".manifest-reserve"));
}

// Issue 16, item 8: the manifest never follows a symlink out of the run directory.
TEST(ManifestFile, ARunDirectoryThatIsASymlinkIsNotWrittenThrough) {
  TempDir dir;
  fs::create_directories(dir.path / "outside");
  fs::create_directory_symlink(dir.path / "outside", dir.path / "run");
  ManifestFile f(dir.path / "run", 4096);
  const std::string err = f.write(sample(), true);
  EXPECT_NE(err.find("symlink"), std::string::npos) << err;
  EXPECT_TRUE(fs::is_empty(dir.path / "outside"));
}

TEST(ManifestFile, StaysInTheDirectoryOpenedEvenIfItsPathIsSwappedForASymlink) {
  TempDir dir;
  fs::create_directories(dir.path / "run");
  fs::create_directories(dir.path / "outside");
  ManifestFile f(dir.path / "run", 0);
  fs::rename(dir.path / "run", dir.path / "moved");
  fs::create_directory_symlink(dir.path / "outside", dir.path / "run");
  EXPECT_EQ(f.write(sample(), true), "");
  EXPECT_TRUE(fs::exists(dir.path / "moved" / "manifest.json"));
  EXPECT_TRUE(fs::is_empty(dir.path / "outside"));
}

TEST(ManifestFile, IsCreated0640WhateverTheUmask) {
  TempDir dir;
  const mode_t old = ::umask(0);
  ManifestFile f(dir.path, 0);
  const std::string err = f.write(sample(), false);
  ::umask(old);
  ASSERT_EQ(err, "");
  struct stat st {};
  ASSERT_EQ(::stat((dir.path / "manifest.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

// The running snapshots are written without fsync (reporting/atomic_file.hpp): still a whole
// file replaced by rename, the temporary gone, and a failure still reported.
TEST(ManifestFile, ASnapshotWrittenWithoutFsyncStillReplacesTheWholeFile) {
  TempDir dir;
  ManifestFile f(dir.path, 4096);
  Manifest first = sample();
  first.run = std::string(5000, 'a');  // a longer file first: the new one must not keep its tail
  ASSERT_EQ(f.write(first, false, /*durable=*/false), "");
  ASSERT_EQ(f.write(sample(), false, /*durable=*/false), "");
  std::ostringstream read;
  read << std::ifstream(dir.path / "manifest.json").rdbuf();
  const std::string text = read.str();
  EXPECT_NE(text.find("\"run\": \"r1\""), std::string::npos) << text.substr(0, 200);
  EXPECT_EQ(text.find("aaaa"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir.path / "manifest.json.tmp"));
  fs::create_directory(dir.path / "manifest.json.tmp");
  EXPECT_NE(f.write(sample(), false, /*durable=*/false), "");
}

}  // namespace
}  // namespace rocecap::daemon
