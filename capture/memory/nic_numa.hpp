// The NUMA node a network interface's PCI device sits on, so that host ring memory is placed
// where the NIC writes it (cross-node DMA costs bandwidth and latency at capture rates).
#pragma once

#include <string>

namespace rocecap::capture::memory {

// <sysfs_root>/class/net/<interface>/device/numa_node; -1 when the file is missing (virtual
// interfaces, single-node hosts report -1 themselves) or does not hold a node number.
int nic_numa_node(const std::string& sysfs_root, const std::string& interface);

}  // namespace rocecap::capture::memory
