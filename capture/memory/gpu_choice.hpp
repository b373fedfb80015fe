// Which CUDA device holds a run's GPU payload slabs. The NIC writes every payload into it over
// PCIe, so the GPU that shares the deepest part of the PCIe tree with the capture NICs is best
// (a shared PCIe switch keeps the traffic off the root complex and the CPU interconnect), then
// one on the NICs' NUMA node; ties go to the lowest CUDA index. `capture.gpu` overrides the
// choice by CUDA index or PCI bus id. Pure function of the GPU list and a sysfs tree, so it is
// tested against a fake one.
#pragma once

#include <string>
#include <vector>

namespace rocecap::capture::memory {

struct GpuCandidate {
  int index = 0;           // CUDA device ordinal
  std::string pci_bus_id;  // as cudaDeviceGetPCIBusId gives it; normalised by choose_gpu
};

struct GpuSelection {
  int index = -1;          // -1: no GPU, or the setting names none that exists (reason says why)
  std::string pci_bus_id;  // normalised
  std::string reason;      // why this one: "the nearest the NICs of 2 GPUs (ens1f0 (...): ...)"
};

// "0000:3B:00.0", "00000000:3b:00.0" or "3b:00.0" -> "0000:3b:00.0" (sysfs spelling); "" when
// the text is not a PCI bus id.
std::string normalize_pci_bus_id(const std::string& text);

// setting: "" chooses by proximity to `interfaces` (netdev names, read under
// <sysfs_root>/class/net/<if>/device; GPUs under <sysfs_root>/bus/pci/devices/<bus id>);
// "N" is CUDA index N; anything else a PCI bus id.
GpuSelection choose_gpu(const std::vector<GpuCandidate>& gpus,
                        const std::vector<std::string>& interfaces, const std::string& setting,
                        const std::string& sysfs_root);

}  // namespace rocecap::capture::memory
