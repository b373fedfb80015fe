// Where the verbs backend finds things in sysfs. The root is configurable so tests can point
// it at a fake tree (softverbs keeps its counters under SOFTVERBS_SYSFS_ROOT).
#pragma once

#include <cstdint>
#include <string>

namespace rocecap::capture::verbs {

// The RDMA device behind netdev `interface`: the entry of
// <root>/class/net/<interface>/device/infiniband/. Throws VerbsError when there is none.
std::string find_rdma_device(const std::string& sysfs_root, const std::string& interface);

// <root>/class/infiniband/<device>/ports/<port>/hw_counters/out_of_buffer
std::string out_of_buffer_path(const std::string& sysfs_root, const std::string& device,
                               unsigned port);

// ROCECAP_SYSFS_ROOT when set, else /sys.
std::string default_sysfs_root();

}  // namespace rocecap::capture::verbs
