#include "capture/memory/gpu_choice.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tuple>

namespace rocecap::capture::memory {
namespace {

namespace fs = std::filesystem;

// How close one GPU is to the NICs; compared as a tuple, larger is closer.
struct Proximity {
  int shared_depth = 0;  // PCIe path components shared with the NICs (summed over NICs)
  int same_node = 0;     // NICs on the GPU's NUMA node
  std::string words;     // what was found, for the log
  auto key() const { return std::tie(shared_depth, same_node); }
};

// The device's place in the PCIe tree: the components of the resolved sysfs path after
// "devices", e.g. {"pci0000:3a", "0000:3a:00.0", "0000:3b:00.0"}. Empty when unknown.
std::vector<std::string> pci_path(const fs::path& link) {
  std::error_code ec;
  const fs::path real = fs::canonical(link, ec);
  std::vector<std::string> parts;
  if (ec) return parts;
  bool below = false;
  for (const auto& c : real) {
    if (below) parts.push_back(c.string());
    if (c == "devices") below = true;
  }
  return parts;
}

int numa_node(const fs::path& device) {
  std::ifstream in(device / "numa_node");
  int node = -1;
  return (in >> node) && node >= 0 ? node : -1;
}

std::size_t common_prefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

std::string relation(const std::vector<std::string>& gpu, const std::vector<std::string>& nic,
                     std::size_t shared, int gpu_node, int nic_node) {
  std::string r;
  if (gpu.empty() || nic.empty()) {
    r = "PCIe position unknown";
  } else if (shared >= 2) {
    r = "below the same PCIe bridge " + gpu[shared - 1];
  } else if (shared == 1) {
    r = "same PCIe root " + gpu[0];
  } else {
    r = "different PCIe roots";
  }
  if (gpu_node >= 0 && gpu_node == nic_node) r += ", same NUMA node " + std::to_string(gpu_node);
  return r;
}

Proximity proximity(const std::string& bus_id, const std::vector<std::string>& interfaces,
                    const fs::path& root) {
  Proximity p;
  const fs::path gpu_dev = root / "bus/pci/devices" / bus_id;
  const auto gpu_path = pci_path(gpu_dev);
  const int gpu_node = numa_node(gpu_dev);
  for (const auto& itf : interfaces) {
    const fs::path nic_dev = root / "class/net" / itf / "device";
    const auto nic_path = pci_path(nic_dev);
    const int nic_node = numa_node(nic_dev);
    // The last component is the device itself: a GPU and a NIC never share it.
    const std::size_t shared = common_prefix(gpu_path, nic_path);
    p.shared_depth += static_cast<int>(shared);
    if (gpu_node >= 0 && gpu_node == nic_node) ++p.same_node;
    const std::string nic_id = nic_path.empty() ? "?" : nic_path.back();
    p.words += (p.words.empty() ? "" : "; ") + itf + " (" + nic_id +
               "): " + relation(gpu_path, nic_path, shared, gpu_node, nic_node);
  }
  return p;
}

bool all_digits(const std::string& s) {
  if (s.empty() || s.size() > 4) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

std::string list(const std::vector<GpuCandidate>& gpus) {
  std::string s;
  for (const auto& g : gpus)
    s += (s.empty() ? "" : ", ") + std::to_string(g.index) + " = " + g.pci_bus_id;
  return gpus.empty() ? "none" : s;
}

}  // namespace

std::string normalize_pci_bus_id(const std::string& text) {
  // Hex digits and separators only (sscanf's %x would also take a sign, "0x" or spaces).
  if (text.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) return "";
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) != 4) {
    domain = 0;
    if (std::sscanf(text.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) != 3) return "";
  }
  if (domain > 0xffff || bus > 0xff || dev > 0x1f || fn > 7) return "";
  char out[16];
  std::snprintf(out, sizeof out, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
  return out;
}

GpuSelection choose_gpu(const std::vector<GpuCandidate>& given,
                        const std::vector<std::string>& interfaces, const std::string& setting,
                        const std::string& sysfs_root) {
  std::vector<GpuCandidate> gpus = given;
  for (auto& g : gpus) {
    const std::string id = normalize_pci_bus_id(g.pci_bus_id);
    if (!id.empty()) g.pci_bus_id = id;
  }
  if (gpus.empty()) return {-1, "", "no CUDA device"};
  if (!setting.empty()) {
    const bool by_index = all_digits(setting);
    const std::string id = by_index ? "" : normalize_pci_bus_id(setting);
    for (const auto& g : gpus) {
      if (by_index ? std::to_string(g.index) == std::to_string(std::stoi(setting))
                   : g.pci_bus_id == id) {
        return {g.index, g.pci_bus_id, "chosen by capture.gpu " + setting};
      }
    }
    return {-1, "",
            "capture.gpu " + setting + " names no CUDA device (present: " + list(gpus) + ")"};
  }
  std::size_t best = 0;
  std::vector<Proximity> near;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    near.push_back(proximity(gpus[i].pci_bus_id, interfaces, sysfs_root));
    if (near[i].key() > near[best].key()) best = i;
  }
  std::size_t ties = 0;
  for (const auto& p : near)
    ties += p.key() == near[best].key() ? 1 : 0;
  const std::string why =
      gpus.size() == 1 ? "the only CUDA device"
      : ties > 1 ? "the lowest index of " + std::to_string(ties) + " GPUs equally near the NICs"
                 : "the nearest the NICs of " + std::to_string(gpus.size()) + " GPUs";
  return {gpus[best].index, gpus[best].pci_bus_id, why + " (" + near[best].words + ")"};
}

}  // namespace rocecap::capture::memory
