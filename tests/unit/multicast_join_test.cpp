#include "capture/net/multicast_join.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rocecap::capture::net {
namespace {

// /proc/net/igmp prints each group of a device as the in-memory (network order) word in hex.
bool igmp_lists(const std::string& device, uint32_t group) {
  std::ifstream in("/proc/net/igmp");
  char want[9];
  std::snprintf(want, sizeof want, "%08X", htonl(group));
  std::string line;
  bool in_device = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '\t' && line[0] != ' ') {
      std::istringstream fields(line);
      std::string idx, name;
      fields >> idx >> name;
      in_device = name == device || name == device + ":";
    } else if (in_device && line.find(want) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST(MulticastJoin, HoldsMembershipForTheRunAndLeavesAtTheEnd) {
  const uint32_t g1 = 0xEFFE2A01, g2 = 0xEFFE2A02;  // 239.254.42.1-2, loopback only
  {
    MulticastJoin join("lo", {g1, g2});
    EXPECT_EQ(join.groups().size(), 2u);
    EXPECT_GT(join.ifindex(), 0u);
    EXPECT_TRUE(igmp_lists("lo", g1));
    EXPECT_TRUE(igmp_lists("lo", g2));
  }
  EXPECT_FALSE(igmp_lists("lo", g1));
  EXPECT_FALSE(igmp_lists("lo", g2));
}

// Linux refuses the 21st membership of one socket (net.ipv4.igmp_max_memberships, default 20)
// with ENOBUFS; 64 groups on one interface need several sockets.
TEST(MulticastJoin, MoreGroupsThanOneSocketMayHoldAreAllJoined) {
  const unsigned limit = igmp_max_memberships();
  std::vector<uint32_t> groups;
  for (uint32_t i = 0; i < 64; ++i)
    groups.push_back(0xEFFE2B00 + i);  // 239.254.43.0-63
  {
    MulticastJoin join("lo", groups);
    EXPECT_EQ(join.groups().size(), 64u);
    EXPECT_EQ(join.sockets(), (64 + limit - 1) / limit);
    for (uint32_t g : groups)
      EXPECT_TRUE(igmp_lists("lo", g)) << std::hex << g;
  }
  for (uint32_t g : groups)
    EXPECT_FALSE(igmp_lists("lo", g)) << std::hex << g;
}

TEST(MulticastJoin, SpreadsGroupsOverSocketsOfTheGivenSize) {
  MulticastJoin join("lo", {0xEFFE2C01, 0xEFFE2C02, 0xEFFE2C03, 0xEFFE2C04, 0xEFFE2C05}, 2);
  EXPECT_EQ(join.sockets(), 3u);
  EXPECT_TRUE(igmp_lists("lo", 0xEFFE2C05));
}

TEST(MulticastJoin, LimitComesFromTheSysctlOrLinuxDefault) {
  const std::string root = ::testing::TempDir() + "/mcjoin_proc";
  std::filesystem::create_directories(root + "/sys/net/ipv4");
  EXPECT_EQ(igmp_max_memberships(root), 20u);  // unreadable: Linux's default
  std::ofstream(root + "/sys/net/ipv4/igmp_max_memberships") << "7\n";
  EXPECT_EQ(igmp_max_memberships(root), 7u);
  std::ofstream(root + "/sys/net/ipv4/igmp_max_memberships") << "0\n";
  EXPECT_EQ(igmp_max_memberships(root), 20u);
  std::filesystem::remove_all(root);
}

TEST(MulticastJoin, UnknownInterfaceIsAClearError) {
  try {
    MulticastJoin join("nosuchif0", {0xEFFE2A01});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("nosuchif0"), std::string::npos) << e.what();
  }
}

TEST(MulticastJoin, NonMulticastAddressIsRefusedNamingTheGroup) {
  try {
    MulticastJoin join("lo", {0xC0000201});  // 192.0.2.1
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("192.0.2.1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rocecap::capture::net
