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

}  // namespace
}  // namespace rocecap::writers
