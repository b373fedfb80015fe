#include "capture/verbs/device_finder.hpp"

#include <cstdlib>
#include <filesystem>

#include "capture/verbs/verbs_objects.hpp"

namespace rocecap::capture::verbs {

std::string find_rdma_device(const std::string& sysfs_root, const std::string& interface) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(sysfs_root) / "class/net" / interface / "device/infiniband";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    return e.path().filename().string();
  throw VerbsError("interface " + interface + ": no RDMA device found in " + dir.string() +
                       "; name it with capture.interfaces[].device",
                   0);
}

std::string out_of_buffer_path(const std::string& sysfs_root, const std::string& device,
                               unsigned port) {
  return sysfs_root + "/class/infiniband/" + device + "/ports/" + std::to_string(port) +
         "/hw_counters/out_of_buffer";
}

std::string default_sysfs_root() {
  const char* env = std::getenv("ROCECAP_SYSFS_ROOT");
  return env != nullptr && *env != '\0' ? env : "/sys";
}

}  // namespace rocecap::capture::verbs
