// nic_numa_node reads the NIC's node from a sysfs tree; anything but a node number is -1.
#include "capture/memory/nic_numa.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace rocecap::capture::memory {
namespace {

namespace fs = std::filesystem;

class NicNuma : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("nic_numa_" + std::to_string(getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void node_file(const std::string& iface, const std::string& text) {
    const fs::path dir = root_ / "class/net" / iface / "device";
    fs::create_directories(dir);
    std::ofstream(dir / "numa_node") << text;
  }
  fs::path root_;
};

TEST_F(NicNuma, ReadsTheNode) {
  node_file("ens1f0", "1\n");
  EXPECT_EQ(nic_numa_node(root_.string(), "ens1f0"), 1);
}

TEST_F(NicNuma, NoNodeIsMinusOne) {
  node_file("lo0", "-1\n");
  node_file("odd", "node one\n");
  EXPECT_EQ(nic_numa_node(root_.string(), "lo0"), -1);
  EXPECT_EQ(nic_numa_node(root_.string(), "odd"), -1);
  EXPECT_EQ(nic_numa_node(root_.string(), "missing"), -1);
  EXPECT_EQ(nic_numa_node(root_.string(), "../../etc"), -1);
  EXPECT_EQ(nic_numa_node(root_.string(), ""), -1);
}

}  // namespace
}  // namespace rocecap::capture::memory
