#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "writer_test_util.hpp"
#include "writers/file_namer.hpp"

namespace rocecap::writers {
namespace {

NameFields fields() {
  return {.run = "run1",
          .interface = "ens1f0",
          .group = "239.17.0.1",
          .port = "36001",
          .antenna = "ak01",
          .source = "192.0.2.11",
          .format = "raw"};
}

std::string expand(std::string_view tmpl, uint64_t seq, const NameFields& f = fields()) {
  FileNamer n;
  const Status parsed = FileNamer::parse(tmpl, n);
  EXPECT_TRUE(parsed.ok()) << parsed.message();
  std::string out;
  const Status s = n.expand(f, seq, out);
  EXPECT_TRUE(s.ok()) << s.message();
  return out;
}

// The message of a template refused at parse time.
std::string parse_error(std::string_view tmpl) {
  FileNamer n;
  const Status s = FileNamer::parse(tmpl, n);
  EXPECT_FALSE(s.ok()) << tmpl;
  EXPECT_EQ(s.code(), EINVAL);
  EXPECT_NE(s.message().find(std::string(tmpl)), std::string::npos) << s.message();
  return s.message();
}

std::string expand_error(std::string_view tmpl, const NameFields& f) {
  FileNamer n;
  EXPECT_TRUE(FileNamer::parse(tmpl, n).ok());
  std::string out;
  const Status s = n.expand(f, 3, out);
  EXPECT_FALSE(s.ok()) << "expanded to " << out;
  return s.message();
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

TEST(FileNamer, ExpandsTheDesignExample) {
  EXPECT_EQ(expand("{run}/{group}_{antenna}.{seq:04}.codif", 7), "run1/239.17.0.1_ak01.0007.codif");
}

TEST(FileNamer, ExpandsEveryPlaceholder) {
  EXPECT_EQ(expand("{run}/{interface}/{group}:{port}-{antenna}-{source}.{format}.{seq}", 12345),
            "run1/ens1f0/239.17.0.1:36001-ak01-192.0.2.11.raw.12345");
}

TEST(FileNamer, SeqWidthPadsButNeverTruncates) {
  EXPECT_EQ(expand("x.{seq:06}", 42), "x.000042");
  EXPECT_EQ(expand("x.{seq:2}", 42), "x.42");
  EXPECT_EQ(expand("x.{seq:02}", 12345), "x.12345");
  EXPECT_EQ(expand("x.{seq}", 0), "x.0");
}

TEST(FileNamer, ReportsWhetherTheTemplateHasSeq) {
  FileNamer a, b;
  ASSERT_TRUE(FileNamer::parse("{run}/a.{seq:03}", a).ok());
  ASSERT_TRUE(FileNamer::parse("{run}/a.pcap", b).ok());
  EXPECT_TRUE(a.has_seq());
  EXPECT_FALSE(b.has_seq());
}

TEST(FileNamer, RefusesTemplatesThatLeaveTheDirectory) {
  EXPECT_TRUE(contains(parse_error("../x.{seq}"), "\"..\" path component"));
  EXPECT_TRUE(contains(parse_error("{run}/../../etc/x"), "\"..\" path component"));
  EXPECT_TRUE(contains(parse_error("/abs/{seq}"), "absolute"));
  EXPECT_TRUE(contains(parse_error("a//b"), "empty path component"));
  EXPECT_TRUE(contains(parse_error("a/b/"), "empty path component"));
  EXPECT_TRUE(contains(parse_error("a/./b"), "\".\" path component"));
  EXPECT_TRUE(contains(parse_error(""), "is empty"));
}

TEST(FileNamer, RefusesMalformedPlaceholders) {
  EXPECT_TRUE(contains(parse_error("{bogus}.raw"), "unknown placeholder {bogus}"));
  EXPECT_TRUE(contains(parse_error("{run:04}"), "bad placeholder {run:04}"));
  EXPECT_TRUE(contains(parse_error("{seq:x}"), "bad placeholder {seq:x}"));
  EXPECT_TRUE(contains(parse_error("{seq:21}"), "bad placeholder {seq:21}"));
  EXPECT_TRUE(contains(parse_error("{seq:}"), "bad placeholder {seq:}"));
  EXPECT_TRUE(contains(parse_error("a{run"), "unterminated '{' at offset 1"));
  EXPECT_TRUE(contains(parse_error("a}b"), "unmatched '}' at offset 1"));
}

TEST(FileNamer, RefusesValuesThatWouldEscape) {
  NameFields f = fields();
  f.group = "../../etc";
  const std::string m = expand_error("{run}/{group}.raw", f);
  EXPECT_TRUE(contains(m, "value of {group} (\"../../etc\") contains '/'")) << m;

  f = fields();
  f.antenna = "..";
  const std::string dotdot = expand_error("{run}/{antenna}/x.raw", f);
  EXPECT_TRUE(contains(dotdot, "expands to \"run1/../x.raw\"")) << dotdot;
  EXPECT_TRUE(contains(dotdot, "\"..\" path component")) << dotdot;

  f = fields();
  f.run = "";
  const std::string empty = expand_error("{run}/x.raw", f);
  EXPECT_TRUE(contains(empty, "absolute")) << empty;

  f = fields();
  f.antenna = std::string("a\0b", 3);
  EXPECT_TRUE(contains(expand_error("{antenna}", f), "contains '/' or NUL"));
}

TEST(FileNamer, MakePathCreatesDirectoriesInsideTheOutputDirectory) {
  test::TempDir dir;
  FileNamer n;
  ASSERT_TRUE(FileNamer::parse("{run}/{interface}/{antenna}.{seq:04}.{format}", n).ok());
  std::filesystem::path p;
  const Status s = n.make_path(dir.path(), fields(), 2, p);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(p, dir.path() / "run1" / "ens1f0" / "ak01.0002.raw");
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() / "run1" / "ens1f0"));
  EXPECT_FALSE(std::filesystem::exists(p)) << "the file itself is created by the writer";
}

TEST(FileNamer, MakePathRefusesADirectoryThatIsASymlinkOutside) {
  test::TempDir dir, elsewhere;
  std::filesystem::create_directory_symlink(elsewhere.path(), dir.path() / "run1");
  FileNamer n;
  ASSERT_TRUE(FileNamer::parse("{run}/{antenna}.{seq}", n).ok());
  std::filesystem::path p;
  const Status s = n.make_path(dir.path(), fields(), 0, p);
  EXPECT_EQ(s.code(), EXDEV);
  EXPECT_TRUE(contains(s.message(), "outside the output directory")) << s.message();
  EXPECT_TRUE(contains(s.message(), elsewhere.path().string())) << s.message();
}

TEST(FileNamer, PathMakerBindsDirectoryAndFields) {
  test::TempDir dir;
  FileNamer n;
  ASSERT_TRUE(FileNamer::parse("{run}/{group}_{antenna}.{seq:04}.codif", n).ok());
  const PathMaker make = n.path_maker(dir.path(), fields());
  std::filesystem::path p;
  ASSERT_TRUE(make(11, p).ok());
  EXPECT_EQ(p, dir.path() / "run1" / "239.17.0.1_ak01.0011.codif");
}

}  // namespace
}  // namespace rocecap::writers
