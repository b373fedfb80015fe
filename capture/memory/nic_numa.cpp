#include "capture/memory/nic_numa.hpp"

#include <fstream>

namespace rocecap::capture::memory {

int nic_numa_node(const std::string& sysfs_root, const std::string& interface) {
  if (interface.empty() || interface.find('/') != std::string::npos) return -1;
  std::ifstream in(sysfs_root + "/class/net/" + interface + "/device/numa_node");
  int node = -1;
  if (!(in >> node) || node < 0) return -1;
  return node;
}

}  // namespace rocecap::capture::memory
