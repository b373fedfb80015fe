// `rocecapd --check-config`: exit codes and what goes to stdout and stderr.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config_test_support.hpp"
#include "daemon/lib/run/check_config.hpp"

namespace rocecap::daemon {
namespace {

class CheckConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rocecap-chk-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  // Host checks on, with the output directory inside the test's temporary directory.
  std::string valid_config() {
    return config::testing::patched("directory: /tmp/rocecap-test",
                                    "directory: " + (dir_ / "out").string());
  }
  // The interfaces' MTUs come from a fake sysfs tree inside the test's directory.
  config::HostChecks host() {
    config::HostChecks h;
    h.usable_cpus = std::vector<unsigned>{0, 1, 2, 3};
    h.sysfs_root = (dir_ / "sys").string();
    return h;
  }
  void set_mtu(const std::string& interface, unsigned mtu) {
    std::filesystem::create_directories(dir_ / "sys/class/net" / interface);
    std::ofstream(dir_ / "sys/class/net" / interface / "mtu") << mtu << "\n";
  }

  std::filesystem::path dir_;
  std::ostringstream out_, err_;
};

TEST_F(CheckConfig, ValidFilePrintsTheSummaryAndExitsZero) {
  const std::string path = write("good.yaml", valid_config());
  EXPECT_EQ(run_check_config(path, out_, err_, host()), kCheckConfigOk);
  EXPECT_EQ(kCheckConfigOk, 0);
  EXPECT_EQ(err_.str(), "");
  const std::string s = out_.str();
  EXPECT_EQ(s.rfind("config      " + path + "\n", 0), 0u) << s;
  EXPECT_NE(s.find("run         test-run (stops after 10s)"), std::string::npos) << s;
  EXPECT_NE(s.find("streams     4 "), std::string::npos) << s;
  EXPECT_NE(s.find(path + ": OK\n"), std::string::npos) << s;
}

TEST_F(CheckConfig, InvalidFilePrintsEveryProblemAndExitsTwo) {
  std::string text = valid_config();
  text.replace(text.find("rotate: 1GiB"), 12, "rotate: 4GB");
  text.replace(text.find("capture_cpu: 1"), 14, "capture_cpu: 9");
  const std::string path = write("bad.yaml", text);
  EXPECT_EQ(run_check_config(path, out_, err_, host()), kCheckConfigInvalid);
  EXPECT_EQ(kCheckConfigInvalid, 2);
  EXPECT_EQ(out_.str(), "");
  EXPECT_EQ(err_.str(),
            path +
                ":11:20: capture.interfaces[0].capture_cpu: CPU 9 is not usable on this host "
                "(this process may run on CPUs 0-3)\n" +
                path + ":27:11: output.rotate: '4GB' is not a size; use e.g. 4GiB\n" + path +
                ": 2 problems, nothing started\n");
}

TEST_F(CheckConfig, MissingFileExitsTwo) {
  const std::string path = (dir_ / "absent.yaml").string();
  EXPECT_EQ(run_check_config(path, out_, err_, host()), kCheckConfigInvalid);
  EXPECT_EQ(err_.str(), path + ": cannot read: No such file or directory\n" + path +
                            ": 1 problem, nothing started\n");
}

}  // namespace
}  // namespace rocecap::daemon

namespace rocecap::daemon {
namespace {

// verbs: a max_frame the interface's MTU can exceed is refused with both numbers (a longer
// frame is IBV_WC_LOC_LEN_ERR, a QP error); MTU + 14 + 2 VLAN tags is accepted; an interface
// this host does not have is not checked.
TEST_F(CheckConfig, MaxFrameBelowTheInterfaceMtuIsRefused) {
  set_mtu("eth0", 9000);
  std::string text = valid_config();
  text.replace(text.find("  header_split: 128\n"), 20, "  header_split: 128\n  max_frame: 9021\n");
  const std::string path = write("small.yaml", text);
  EXPECT_EQ(run_check_config(path, out_, err_, host()), kCheckConfigInvalid);
  EXPECT_NE(err_.str().find(path + ":8:14: capture.max_frame: 9021 B is below the longest frame "
                                   "interface eth0 can deliver: MTU 9000 + 14 (Ethernet header) "
                                   "+ 8 (2 VLAN tags) = 9022 B"),
            std::string::npos)
      << err_.str();
  EXPECT_NE(err_.str().find("make max_frame at least 9022"), std::string::npos) << err_.str();
  err_.str("");
  text.replace(text.find("max_frame: 9021"), 15, "max_frame: 9022");
  EXPECT_EQ(run_check_config(write("exact.yaml", text), out_, err_, host()), kCheckConfigOk)
      << err_.str();
  set_mtu("eth0", 1500);
  text.replace(text.find("max_frame: 9022"), 15, "max_frame: 1521");
  EXPECT_EQ(run_check_config(write("1500.yaml", text), out_, err_, host()), kCheckConfigInvalid);
  EXPECT_NE(err_.str().find("MTU 1500 + 14 (Ethernet header) + 8 (2 VLAN tags) = 1522 B"),
            std::string::npos)
      << err_.str();
  err_.str("");
  std::filesystem::remove_all(dir_ / "sys/class/net/eth0");  // not on this host: not checked
  EXPECT_EQ(run_check_config(write("absent.yaml", text), out_, err_, host()), kCheckConfigOk)
      << err_.str();
  set_mtu("eth0", 9000);  // the pcap backend truncates at snaplen instead: not this check
  text.replace(text.find("backend: verbs"), 14, "backend: pcap");
  text.replace(text.find("      device: mlx5_0\n"), 21, "");
  EXPECT_EQ(run_check_config(write("pcap.yaml", text), out_, err_, host()), kCheckConfigOk)
      << err_.str();
}

}  // namespace
}  // namespace rocecap::daemon
