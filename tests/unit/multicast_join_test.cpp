#include "capture/net/multicast_join.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace rocecap::net {
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
}  // namespace rocecap::net
