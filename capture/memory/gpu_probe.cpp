// probe_chosen_gpu: list the CUDA devices, choose one (gpu_choice.hpp), probe it. The same in
// builds with and without CUDA (list_gpus says "built without CUDA" in the latter).
#include "capture/memory/cuda_runtime.hpp"

namespace rocecap::capture::memory {

GpuProbe probe_chosen_gpu(const std::vector<std::string>& interfaces, const std::string& setting,
                          const std::string& sysfs_root) {
  std::string why;
  const std::vector<GpuCandidate> gpus = list_gpus(why);
  if (gpus.empty()) {
    return GpuProbe{false, 0, why.empty() ? "cudaGetDeviceCount: no CUDA device" : why, 0};
  }
  const GpuSelection chosen = choose_gpu(gpus, interfaces, setting, sysfs_root);
  if (chosen.index < 0) return GpuProbe{false, int(gpus.size()), chosen.reason, 0};
  GpuProbe p = probe_gpu(chosen.index);
  p.detail += " at " + (chosen.pci_bus_id.empty() ? "an unknown PCI address" : chosen.pci_bus_id) +
              ", " + chosen.reason;
  return p;
}

}  // namespace rocecap::capture::memory
