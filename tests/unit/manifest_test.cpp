#include "daemon/lib/reporting/manifest.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace rocecap::daemon {
namespace {

namespace fs = std::filesystem;

Manifest sample() {
  Manifest m;
  m.run = "obs42";
  m.state = "stopped";
  m.started = iso8601_utc(1'763'726'400'000'000'000);
  m.stopped = iso8601_utc(1'763'726'460'250'000'000);
  ManifestStream s;
  s.interface = "veth1";
  s.group = "239.17.0.1";
  s.port = 36001;
  s.antenna = "ak01";
  s.source = "192.0.2.11";
  s.packets = 1000;
  s.bytes = 8'256'000;
  s.lost = 3;
  s.gaps = {{10, 2}, {500, 1}};
  s.first_frame = ManifestFrameTime{100, 1'763'726'400'000'000'000};
  s.files = {{"obs42/a.0000.codif", "raw", 8'256'000}};
  m.streams.push_back(s);
  ManifestInterface i;
  i.name = "veth1";
  i.rejected = {{"bad_sync", 4}, {"no_stream", 2}};
  i.write_errors = 3;
  m.interfaces = {i, i};
  m.errors = {{"", "write /d/veth1.0001.pcap: No space left on device"}};
  m.errors_not_listed = 7;
  return m;
}

// The verbs backend's per-interface section: time source, completion errors and recoveries,
// the first error's text; null for interfaces of the pcap backends.
TEST(Manifest, VerbsSectionOnlyForVerbsInterfaces) {
  Manifest m = sample();
  m.streams[0].qp_recoveries = 2;
  ManifestVerbs v0;
  v0.device = "mlx5_0";
  v0.time_source = "nic-raw-clock";
  v0.wc_errors = 3;
  v0.qp_recoveries = 2;
  v0.first_wc_error = "RDMA device mlx5_0 (veth1), stream x";
  v0.oversize = 4;
  m.interfaces[0].verbs = v0;
  const nlohmann::json j = to_json(m);
  const auto& v = j["interfaces"][0]["verbs"];
  EXPECT_EQ(v["device"], "mlx5_0");
  EXPECT_EQ(v["time_source"], "nic-raw-clock");
  EXPECT_EQ(v["wc_errors"], 3);
  EXPECT_EQ(v["oversize"], 4);
  EXPECT_EQ(v["qp_recoveries"], 2);
  EXPECT_EQ(v["first_wc_error"], "RDMA device mlx5_0 (veth1), stream x");
  EXPECT_EQ(j["streams"][0]["qp_recoveries"], 2);
  EXPECT_TRUE(j["interfaces"][1]["verbs"].is_null());
  m.interfaces[0].verbs->first_wc_error.clear();
  EXPECT_TRUE(to_json(m)["interfaces"][0]["verbs"]["first_wc_error"].is_null());
}

// The verbs view has exactly these keys: the NIC clock offset and encoding went with the
// WALLCLOCK timestamps (capture/verbs/README.md), and no key stays behind always null.
TEST(Manifest, VerbsViewHasExactlyItsKeys) {
  Manifest m = sample();
  ManifestVerbs v0;
  v0.device = "mlx5_0";
  v0.time_source = "nic-raw-clock";
  m.interfaces[0].verbs = v0;
  const nlohmann::json j = to_json(m);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j["interfaces"][0]["verbs"].items())
    keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"device", "first_wc_error", "oversize", "qp_recoveries",
                                            "time_source", "wc_errors"}));
}

TEST(Manifest, RendersEveryRequiredField) {
  const nlohmann::json j = to_json(sample());
  EXPECT_EQ(j["run"], "obs42");
  EXPECT_EQ(j["started"], "2025-11-21T12:00:00.000Z");
  EXPECT_EQ(j["stopped"], "2025-11-21T12:01:00.250Z");
  const auto& s = j["streams"][0];
  for (const char* key : {"interface", "group", "port", "antenna", "source", "packets", "bytes",
                          "lost", "duplicate", "late", "invalid", "gaps", "files"}) {
    EXPECT_TRUE(s.contains(key)) << key;
  }
  EXPECT_EQ(s["gaps"], nlohmann::json::parse("[[10,2],[500,1]]"));
  EXPECT_EQ(s["files"][0]["bytes"], 8'256'000);
  EXPECT_EQ(s["first_frame"]["index"], 100);
  EXPECT_TRUE(s["last_frame"].is_null());
  // Rejections are summed over interfaces by reason.
  EXPECT_EQ(j["rejected"]["bad_sync"], 8);
  EXPECT_EQ(j["rejected"]["no_stream"], 4);
  EXPECT_EQ(j["interfaces"][0]["write_errors"], 3);
  EXPECT_EQ(j["errors"][0]["message"], "write /d/veth1.0001.pcap: No space left on device");
  EXPECT_EQ(j["errors_not_listed"], 7);
}

TEST(Manifest, RunningManifestHasNullStopTime) {
  Manifest m = sample();
  m.stopped.clear();
  EXPECT_TRUE(to_json(m)["stopped"].is_null());
}

TEST(Manifest, WriteReplacesTheFileWholeAndLeavesNoTemporary) {
  const fs::path dir = fs::temp_directory_path() / ("rocecap_manifest_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "manifest.json").string();
  std::ofstream(path) << "old contents that are longer than nothing";
  ASSERT_EQ(write_manifest(path, sample()), "");
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["run"], "obs42");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  fs::remove_all(dir);
}

TEST(Manifest, UnwritableDirectoryIsReportedWithThePath) {
  const std::string err = write_manifest("/nonexistent-dir/manifest.json", sample());
  EXPECT_NE(err.find("/nonexistent-dir/manifest.json"), std::string::npos) << err;
}

}  // namespace
}  // namespace rocecap::daemon
