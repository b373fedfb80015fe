// choose_gpu against a fake sysfs tree: the GPU below the NIC's PCIe switch wins over one on the
// same root port only, which wins over one on another root complex; without PCIe proximity the
// NIC's NUMA node decides; ties and unknown positions go to the lowest CUDA index; capture.gpu
// overrides by index or PCI bus id (any spelling cudaDeviceGetPCIBusId or nvidia-smi uses), and
// names the devices present when it matches none.
#include "capture/memory/gpu_choice.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace rocecap::capture::memory {
namespace {

namespace fs = std::filesystem;

class GpuChoice : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpu_choice_" + std::to_string(getpid()));
    fs::remove_all(root_);
    // NIC ens1f0 behind switch 0000:01:00.0 (downstream port 0000:02:08.0) on root pci0000:00,
    // NUMA node 0.
    nic("ens1f0", "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:05:00.0", 0);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path device(const std::string& path, int node) {
    const fs::path dir = root_ / "devices" / path;
    fs::create_directories(dir);
    std::ofstream(dir / "numa_node") << node << "\n";
    return dir;
  }
  void nic(const std::string& name, const std::string& path, int node) {
    const fs::path dir = device(path, node);
    fs::create_directories(root_ / "class/net" / name);
    fs::create_symlink(fs::relative(dir, root_ / "class/net" / name),
                       root_ / "class/net" / name / "device");
  }
  void gpu(const std::string& path, int node) {
    const fs::path dir = device(path, node);
    fs::create_directories(root_ / "bus/pci/devices");
    fs::create_symlink(fs::relative(dir, root_ / "bus/pci/devices"),
                       root_ / "bus/pci/devices" / dir.filename());
  }
  GpuSelection choose(const std::vector<GpuCandidate>& gpus, const std::string& setting = "") {
    return choose_gpu(gpus, {"ens1f0"}, setting, root_.string());
  }
  fs::path root_;
};

TEST_F(GpuChoice, SamePcieSwitchBeatsSameRootBeatsOtherRoot) {
  gpu("pci0000:80/0000:80:01.0/0000:81:00.0", 1);                            // other root
  gpu("pci0000:00/0000:00:02.0/0000:07:00.0", 0);                            // same root
  gpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:06:00.0", 0);  // same switch
  // cudaDeviceGetPCIBusId spells them in upper case, nvidia-smi with an 8-digit domain.
  const std::vector<GpuCandidate> all = {
      {0, "0000:81:00.0"}, {1, "0000:07:00.0"}, {2, "00000000:06:00.0"}};
  const GpuSelection s = choose(all);
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.pci_bus_id, "0000:06:00.0");
  EXPECT_EQ(s.reason,
            "the nearest the NICs of 3 GPUs (ens1f0 (0000:05:00.0): below the same PCIe bridge "
            "0000:01:00.0, same NUMA node 0)");
  const GpuSelection r = choose({all[0], all[1]});
  EXPECT_EQ(r.index, 1);
  EXPECT_NE(r.reason.find("same PCIe root pci0000:00, same NUMA node 0"), std::string::npos)
      << r.reason;
}

TEST_F(GpuChoice, WithoutPcieProximityTheNumaNodeDecides) {
  gpu("pci0000:80/0000:80:01.0/0000:81:00.0", 1);
  gpu("pci0000:40/0000:40:01.0/0000:41:00.0", 0);
  const GpuSelection s = choose({{0, "0000:81:00.0"}, {1, "0000:41:00.0"}});
  EXPECT_EQ(s.index, 1);
  EXPECT_NE(s.reason.find("different PCIe roots, same NUMA node 0"), std::string::npos) << s.reason;
}

TEST_F(GpuChoice, TiesAndUnknownPositionsGoToTheLowestIndex) {
  gpu("pci0000:80/0000:80:01.0/0000:81:00.0", 1);
  gpu("pci0000:80/0000:80:02.0/0000:82:00.0", 1);
  const GpuSelection tie = choose({{0, "0000:81:00.0"}, {1, "0000:82:00.0"}});
  EXPECT_EQ(tie.index, 0);
  EXPECT_NE(tie.reason.find("the lowest index of 2 GPUs equally near the NICs"), std::string::npos)
      << tie.reason;
  // GPUs sysfs does not know (or whose bus id the runtime could not give).
  const GpuSelection unknown = choose({{0, ""}, {1, "0000:99:00.0"}});
  EXPECT_EQ(unknown.index, 0);
  EXPECT_NE(unknown.reason.find("PCIe position unknown"), std::string::npos) << unknown.reason;
  EXPECT_EQ(choose({{0, "0000:81:00.0"}}).reason.rfind("the only CUDA device", 0), 0u);
}

TEST_F(GpuChoice, CaptureGpuOverridesByIndexOrBusId) {
  gpu("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:06:00.0", 0);
  gpu("pci0000:80/0000:80:01.0/0000:81:00.0", 1);
  const std::vector<GpuCandidate> all = {{0, "0000:06:00.0"}, {1, "0000:81:00.0"}};
  EXPECT_EQ(choose(all, "1").index, 1);
  EXPECT_EQ(choose(all, "1").reason, "chosen by capture.gpu 1");
  EXPECT_EQ(choose(all, "00000000:81:00.0").index, 1);
  EXPECT_EQ(choose(all, "81:00.0").index, 1);
  EXPECT_EQ(choose(all, "0000:06:00.0").index, 0);
  const GpuSelection none = choose(all, "2");
  EXPECT_EQ(none.index, -1);
  EXPECT_EQ(none.reason,
            "capture.gpu 2 names no CUDA device (present: 0 = 0000:06:00.0, 1 = 0000:81:00.0)");
  EXPECT_EQ(choose(all, "0000:3b:00.0").index, -1);
  EXPECT_EQ(choose({}, "").index, -1);
}

TEST(PciBusId, NormalisedToTheSysfsSpelling) {
  EXPECT_EQ(normalize_pci_bus_id("0000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("00000000:3B:00.0"), "0000:3b:00.0");
  EXPECT_EQ(normalize_pci_bus_id("3b:1f.7"), "0000:3b:1f.7");
  EXPECT_EQ(normalize_pci_bus_id("10000:3b:00.0"), "");
  EXPECT_EQ(normalize_pci_bus_id("0000:3b:20.0"), "");
  EXPECT_EQ(normalize_pci_bus_id("0000:3b:00.0x"), "");
  EXPECT_EQ(normalize_pci_bus_id("gpu0"), "");
}

}  // namespace
}  // namespace rocecap::capture::memory
