// Output file-name templates: syntax, confinement to the output directory, expansion.
#include <gtest/gtest.h>

#include "config/name_template.hpp"

namespace rocecap::config {
namespace {

TEST(ConfigNameTemplate, AcceptsTheDocumentedPlaceholders) {
  EXPECT_EQ(check_name_template("{run}/{group}_{antenna}.{seq:04}.codif", TemplateScope::stream),
            "");
  EXPECT_EQ(check_name_template("{run}/{interface}/{group}_{port}_{antenna}-{seq}.{ext}",
                                TemplateScope::stream),
            "");
  EXPECT_EQ(check_name_template("{run}/{interface}.{seq:09}.pcap", TemplateScope::interface), "");
}

TEST(ConfigNameTemplate, RefusesWhatCouldEscapeOrBreak) {
  const std::pair<const char*, const char*> bad[] = {
      {"/data/{antenna}.{seq}", "not an absolute path"},
      {"../{antenna}.{seq}", "must not contain '..'"},
      {"{run}/../../etc/{antenna}.{seq}", "must not contain '..'"},
      {"{run}//{antenna}.{seq}", "empty path components"},
      {"./{antenna}.{seq}", "must not contain '.'"},
      {"{run}/{antenna}.{seq}/", "not end with '/'"},
      {"{run}/{antenna}", "has no {seq}"},
      {"{run}/{antenna}.{seq:4}", "unknown placeholder '{seq:4}'"},
      {"{run}/{antenna}.{seq:00}", "unknown placeholder '{seq:00}'"},
      {"{run}/{station}.{seq}", "unknown placeholder '{station}'"},
      {"{run}/{antenna.{seq}", "unknown placeholder '{antenna.{seq}'"},
      {"{run}/antenna}.{seq}", "'}' without '{'"},
      {"{run}/{antenna}.{seq", "'{' without '}'"},
      {"{run}/{antenna}.{ext:2}", "unknown placeholder '{ext:2}'"},
  };
  for (const auto& [tmpl, message] : bad) {
    const std::string why = check_name_template(tmpl, TemplateScope::stream);
    EXPECT_NE(why.find(message), std::string::npos) << tmpl << " -> '" << why << "'";
  }
  EXPECT_NE(check_name_template("{run}/{antenna}.{seq}.pcap", TemplateScope::interface)
                .find("{antenna} is not defined for per-interface pcap files"),
            std::string::npos);
}

TEST(ConfigNameTemplate, Expands) {
  NameFields f;
  f.run = "obs1";
  f.interface = "eth0";
  f.group = "239.17.0.1";
  f.port = 36001;
  f.antenna = "ak01";
  f.ext = "codif";
  f.seq = 7;
  EXPECT_EQ(expand_name("{run}/{interface}/{group}_{port}_{antenna}.{seq:04}.{ext}", f),
            "obs1/eth0/239.17.0.1_36001_ak01.0007.codif");
  f.seq = 123456;
  EXPECT_EQ(expand_name("{antenna}-{seq:03}-{seq}", f), "ak01-123456-123456");
}

TEST(ConfigNameTemplate, ExtensionFollowsFormatAndStripping) {
  RunConfig c;
  EXPECT_EQ(file_extension(c, OutputFormat::raw), "codif");
  EXPECT_EQ(file_extension(c, OutputFormat::codifhdr), "chead");
  EXPECT_EQ(file_extension(c, OutputFormat::pcap), "pcap");
  c.output.strip_headers = true;
  EXPECT_EQ(file_extension(c, OutputFormat::raw), "dat");
  c.output.strip_headers = false;
  c.streams.format = StreamFormat::udp;
  EXPECT_EQ(file_extension(c, OutputFormat::raw), "dat");
}

}  // namespace
}  // namespace rocecap::config
