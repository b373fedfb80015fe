// The run directory: created 0750 inside output.directory, refused when it is a symlink or
// resolves outside; removed or replaced during the run is a storage loss (issue 16).
#include "daemon/lib/run/run_directory.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace rocecap::daemon {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("rocecap_rd_" + std::to_string(getpid()));
  TempDir() { fs::create_directories(path); }
  ~TempDir() { fs::remove_all(path); }
};

std::string refusal(const fs::path& out, const fs::path& run) {
  try {
    RunDirectory d(out, run);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return {};
}

TEST(RunDirectory, IsCreated0750UnderAnyUmask) {
  TempDir dir;
  const mode_t old = ::umask(0);
  {
    RunDirectory d(dir.path / "out", dir.path / "out" / "a" / "run");
    EXPECT_EQ(d.check(), "");
  }
  ::umask(old);
  for (const fs::path& p :
       {dir.path / "out", dir.path / "out" / "a", dir.path / "out" / "a" / "run"}) {
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0750u) << p;
  }
}

TEST(RunDirectory, ASymlinkedRunDirectoryIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path / "out");
  fs::create_directories(dir.path / "outside");
  fs::create_directory_symlink(dir.path / "outside", dir.path / "out" / "run");
  const std::string why = refusal(dir.path / "out", dir.path / "out" / "run");
  EXPECT_NE(why.find("is a symlink"), std::string::npos) << why;
  EXPECT_NE(why.find((dir.path / "outside").string()), std::string::npos) << why;
}

TEST(RunDirectory, AParentSymlinkedOutsideIsRefused) {
  TempDir dir;
  fs::create_directories(dir.path / "out");
  fs::create_directories(dir.path / "outside");
  fs::create_directory_symlink(dir.path / "outside", dir.path / "out" / "link");
  const std::string why = refusal(dir.path / "out", dir.path / "out" / "link" / "run");
  EXPECT_NE(why.find("outside the output directory"), std::string::npos) << why;
}

TEST(RunDirectory, RemovedOrReplacedIsSeen) {
  TempDir dir;
  RunDirectory d(dir.path / "out", dir.path / "out" / "run");
  EXPECT_EQ(d.check(), "");
  fs::rename(dir.path / "out" / "run", dir.path / "out" / "old");
  fs::create_directories(dir.path / "out" / "run");
  EXPECT_NE(d.check().find("was replaced"), std::string::npos) << d.check();
  fs::remove_all(dir.path / "out" / "old");
  EXPECT_NE(d.check().find("was removed"), std::string::npos) << d.check();
  fs::remove_all(dir.path / "out" / "run");
  EXPECT_NE(d.check().find("was removed"), std::string::npos) << d.check();
}

TEST(StorageLoss, KeepsTheFirstReason) {
  StorageLoss s;
  EXPECT_FALSE(s.lost());
  s.report("first");
  s.report("second");
  EXPECT_TRUE(s.lost());
  EXPECT_EQ(s.why(), "first");
}

}  // namespace
}  // namespace rocecap::daemon
