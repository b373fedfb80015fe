// tools/lib/inspect_run: a run's files read from their output targets as one report per stream.
#include "tools/lib/inspect_run.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "codif_test_util.hpp"

namespace rocecap::tools {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

class InspectRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("inspect_run_test." + std::to_string(::getpid()));
    for (const char* t : {"t0/r", "t1/r"})
      fs::create_directories(dir_ / t);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Frames with the given frame numbers (ASKAP stream, one station/thread), back to back.
  void write_frames(const fs::path& p, std::initializer_list<uint32_t> numbers) {
    std::ofstream out(p, std::ios::binary);
    capture::codif::Header h = capture::codif::test::askap();
    for (uint32_t n : numbers) {
      h.frame = n;
      const auto f = capture::codif::test::payload(h);
      out.write(reinterpret_cast<const char*>(f.data()), static_cast<std::streamsize>(f.size()));
    }
  }
  json file(const std::string& path, int target) {
    return {{"path", path}, {"format", "raw"}, {"bytes", 0}, {"target", target}};
  }
  void manifest(const json& files) {
    const json m = {
        {"run", "r"},
        {"targets", json::array({{{"directory", (dir_ / "t0").string()}},
                                 {{"directory", (dir_ / "t1").string()}}})},
        {"streams",
         json::array(
             {{{"group", "239.1.1.1"}, {"port", 4000}, {"antenna", "a1"}, {"files", files}}})},
        {"interfaces", json::array()}};
    std::ofstream(dir_ / "t0/r/manifest.json") << m.dump();
  }
  fs::path dir_;
};

TEST_F(InspectRun, AStreamSpreadOverTwoTargetsReadsAsOne) {
  // Frames 100-102 on target 0, 103-104 and 106 on target 1, then 105 (late) on target 0.
  write_frames(dir_ / "t0/r/a.0000.codif", {100, 101, 102});
  write_frames(dir_ / "t1/r/a.0001.codif", {103, 104, 106});
  write_frames(dir_ / "t0/r/a.0002.codif", {105, 102});
  manifest(json::array(
      {file("r/a.0000.codif", 0), file("r/a.0001.codif", 1), file("r/a.0002.codif", 0)}));
  for (const fs::path& p : {dir_ / "t0/r", dir_ / "t0/r/manifest.json"}) {
    ASSERT_TRUE(is_run_path(p)) << p;
    const RunInspectReport r = inspect_run(p);
    EXPECT_EQ(r.targets, 2u);
    EXPECT_TRUE(r.unreadable.empty());
    ASSERT_EQ(r.parts.size(), 1u);
    const RunInspectPart& part = r.parts[0];
    EXPECT_EQ(part.owner, "239.1.1.1:4000 a1");
    ASSERT_EQ(part.files.size(), 3u);
    EXPECT_EQ(part.files[1], (dir_ / "t1/r/a.0001.codif").string());
    ASSERT_EQ(part.report.streams.size(), 1u);
    const InspectStream& s = part.report.streams[0];
    EXPECT_EQ(s.frames, 8u);
    EXPECT_EQ(s.unique_frames, 7u);
    EXPECT_EQ(s.duplicates, 1u);  // 102 again, in the third file
    EXPECT_EQ(s.late, 2u);        // 105 and 102 after 106: across the target boundary
    EXPECT_EQ(s.missing, 0u);
  }
  EXPECT_FALSE(is_run_path(dir_ / "t0/r/a.0000.codif"));
}

TEST_F(InspectRun, AListedFileThatCannotBeReadIsNamedAndTheRestReported) {
  write_frames(dir_ / "t0/r/a.0000.codif", {100, 101});
  write_frames(dir_ / "t0/r/a.0002.codif", {104});
  manifest(json::array(
      {file("r/a.0000.codif", 0), file("r/a.0001.codif", 1), file("r/a.0002.codif", 0)}));
  const RunInspectReport r = inspect_run(dir_ / "t0/r");
  ASSERT_EQ(r.unreadable.size(), 1u);
  EXPECT_NE(r.unreadable[0].find((dir_ / "t1/r/a.0001.codif").string()), std::string::npos)
      << r.unreadable[0];
  ASSERT_EQ(r.parts.size(), 1u);
  const InspectStream& s = r.parts[0].report.streams.at(0);
  EXPECT_EQ(s.unique_frames, 3u);
  EXPECT_EQ(s.missing, 2u);  // 102 and 103: the file that could not be read
  const json j = to_json(r);
  EXPECT_EQ(j["parts"][0]["owner"], "239.1.1.1:4000 a1");
  EXPECT_EQ(j["unreadable"].size(), 1u);
}

TEST_F(InspectRun, NoManifestIsAClearError) {
  EXPECT_THROW(inspect_run(dir_ / "t1/r"), std::runtime_error);
}

}  // namespace
}  // namespace rocecap::tools
