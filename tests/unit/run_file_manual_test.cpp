// rocecap-run.yaml(5) documents exactly the keys the loader accepts: the page's key entries
// (`.It Cm <path>` lines) are compared with config/schema_keys.hpp, the lists every MapView of
// the loader is built from. A key added to the loader without its entry in the page, or an
// entry left in the page for a key the loader no longer knows, fails here by name.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "config/schema_keys.hpp"

namespace {

const std::string kPage = std::string(ROCECAP_SOURCE_DIR) + "/doc/man/rocecap-run.yaml.5";

std::set<std::string> schema_paths() {
  std::set<std::string> out;
  for (const auto& map : rocecap::config::schema::kMaps) {
    for (std::string_view key : map.keys) {
      out.insert(map.path.empty() ? std::string(key)
                                  : std::string(map.path) + "." + std::string(key));
    }
  }
  return out;
}

// Every `.It Cm PATH` of the page: the form each key's entry takes (mdoc list item, key as a
// command modifier), so prose that merely mentions a key does not count as documenting it.
std::set<std::string> page_paths(std::istream& in) {
  std::set<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(".It Cm ", 0) != 0) continue;
    std::istringstream words(line.substr(7));
    std::string path;
    words >> path;
    out.insert(path);
  }
  return out;
}

std::string joined(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s)
    out += (out.empty() ? "" : ", ") + x;
  return out;
}

TEST(RunFileManual, DocumentsEveryKeyTheLoaderAccepts) {
  std::ifstream in(kPage);
  ASSERT_TRUE(in) << "cannot read " << kPage;
  const auto page = page_paths(in);
  const auto schema = schema_paths();
  std::set<std::string> missing, stale;
  for (const auto& k : schema)
    if (!page.count(k)) missing.insert(k);
  for (const auto& k : page)
    if (!schema.count(k)) stale.insert(k);
  EXPECT_TRUE(missing.empty()) << kPage << " has no entry (.It Cm KEY) for: " << joined(missing);
  EXPECT_TRUE(stale.empty()) << kPage
                             << " documents keys the loader does not accept: " << joined(stale);
}

// A key listed twice in one map would be documented once and still pass the comparison above.
TEST(RunFileManual, SchemaTableHasNoDuplicateKeys) {
  for (const auto& map : rocecap::config::schema::kMaps) {
    std::set<std::string_view> seen;
    for (std::string_view key : map.keys)
      EXPECT_TRUE(seen.insert(key).second) << map.path << "." << key << " listed twice";
  }
}

}  // namespace
