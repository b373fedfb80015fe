#include <fcntl.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "writer_test_util.hpp"
#include "writers/output_path.hpp"

namespace rocecap::writers {
namespace {

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

TEST(OutputPath, CreatesDirectoriesInsideTheOutputDirectory) {
  test::TempDir dir;
  std::filesystem::path p;
  const Status s = place_in_directory(dir.path(), "run1/ens1f0/ak01.0002.codif", p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p, dir.path() / "run1" / "ens1f0" / "ak01.0002.codif");
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "run1" / "ens1f0"));
  EXPECT_FALSE(std::filesystem::exists(p)) << "the file itself is created by the writer";
}

TEST(OutputPath, RefusesNamesThatLeaveTheDirectory) {
  test::TempDir dir;
  for (const char* bad : {"/etc/x", "../x", "run1/../../x", "run1//x", "./x", ""}) {
    std::filesystem::path p;
    const Status s = place_in_directory(dir.path(), bad, p);
    EXPECT_EQ(s.code(), EINVAL) << bad;
    EXPECT_TRUE(contains(s.message(), std::string("\"") + bad + "\"")) << s.message();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path().parent_path() / "x"));
}

TEST(OutputPath, RefusesADirectoryThatIsASymlinkOutside) {
  test::TempDir dir, elsewhere;
  std::filesystem::create_directory_symlink(elsewhere.path(), dir.path() / "run1");
  std::filesystem::path p;
  const Status s = place_in_directory(dir.path(), "run1/ak01.0", p);
  EXPECT_EQ(s.code(), EXDEV);
  EXPECT_TRUE(contains(s.message(), "outside the output directory")) << s.message();
  EXPECT_TRUE(contains(s.message(), elsewhere.path().string())) << s.message();
}

// Below a held directory (issue 23): the directories are created and opened component by
// component from the descriptor, never through the path again: the directory the descriptor
// holds gets them even after its path names another one; a symlink is never followed.
TEST(OutputPath, OpensTheParentBelowTheHeldDirectoryNotThroughItsPath) {
  test::TempDir dir;
  UniqueFd root(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_GE(root.get(), 0);
  const std::filesystem::path moved = dir.path().string() + ".moved";
  std::filesystem::rename(dir.path(), moved);
  std::filesystem::create_directory(dir.path());  // the path now names another directory
  UniqueFd parent;
  std::string leaf;
  const Status s =
      open_parent_at(root.get(), dir.path(), "run1/ens1f0/ak01.0002.codif", parent, leaf);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(leaf, "ak01.0002.codif");
  EXPECT_TRUE(std::filesystem::is_directory(moved / "run1" / "ens1f0"));
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "created through the path";
  for (const char* bad : {"/etc/x", "../x", "run1//x", ""}) {
    EXPECT_EQ(open_parent_at(root.get(), dir.path(), bad, parent, leaf).code(), EINVAL) << bad;
  }
  std::filesystem::remove_all(moved);
}

TEST(OutputPath, OpenParentNeverFollowsASymlink) {
  test::TempDir dir, elsewhere;
  std::filesystem::create_directory_symlink(elsewhere.path(), dir.path() / "run1");
  UniqueFd root(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  UniqueFd parent;
  std::string leaf;
  const Status s = open_parent_at(root.get(), dir.path(), "run1/sub/ak01.0", parent, leaf);
  EXPECT_TRUE(s.code() == ELOOP || s.code() == ENOTDIR) << s.message();
  EXPECT_TRUE(contains(s.message(), "symlink")) << s.message();
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere.path())) << "created through the symlink";
}

}  // namespace
}  // namespace rocecap::writers
