// choose_payload_memory: auto takes GPU memory only when every link holds and otherwise says
// which link is missing; gpu that cannot be satisfied is an error naming it; host is host.
#include "capture/memory/payload_choice.hpp"

#include <gtest/gtest.h>

#include <string>

namespace rocecap::capture::memory {
namespace {

PayloadFacts all_links(int* probes) {
  PayloadFacts f;
  f.nic_scatters = true;
  f.writers_stage = true;
  f.gpu = GpuProbe{true, 1, "GPU 0: Test GPU"};
  f.probe_registration = [probes](int) {
    ++*probes;
    return RegistrationPath{true, "dma-buf"};
  };
  return f;
}

std::string gpu_error(const PayloadFacts& f) {
  try {
    choose_payload_memory(PayloadRequest::gpu, f);
  } catch (const PayloadMemoryError& e) {
    return e.what();
  }
  return "no error";
}

TEST(PayloadChoice, EveryLinkPresentGivesGpuWithTheMethod) {
  int probes = 0;
  const PayloadFacts f = all_links(&probes);
  const PayloadChoice a = choose_payload_memory(PayloadRequest::automatic, f);
  EXPECT_EQ(a.kind, MemoryKind::gpu);
  EXPECT_EQ(a.reason, "auto: GPU 0: Test GPU, registered with the NIC through dma-buf");
  const PayloadChoice g = choose_payload_memory(PayloadRequest::gpu, f);
  EXPECT_EQ(g.kind, MemoryKind::gpu);
  EXPECT_EQ(g.reason, "configured: gpu; GPU 0: Test GPU, registered with the NIC through dma-buf");
  EXPECT_EQ(probes, 2);
}

TEST(PayloadChoice, HostIsHostWithoutProbing) {
  int probes = 0;
  const PayloadChoice c = choose_payload_memory(PayloadRequest::host, all_links(&probes));
  EXPECT_EQ(c.kind, MemoryKind::host);
  EXPECT_EQ(c.reason, "configured: host");
  EXPECT_EQ(probes, 0);
}

TEST(PayloadChoice, PcapBackendsAreHostAndRefuseGpu) {
  int probes = 0;
  PayloadFacts f = all_links(&probes);
  f.nic_scatters = false;
  const PayloadChoice c = choose_payload_memory(PayloadRequest::automatic, f);
  EXPECT_EQ(c.kind, MemoryKind::host);
  EXPECT_EQ(c.reason, "the pcap backends copy each frame into host memory");
  EXPECT_NE(gpu_error(f).find("capture.payload_memory gpu: the pcap backends copy each frame "
                              "with the CPU"),
            std::string::npos);
  EXPECT_EQ(probes, 0);
}

TEST(PayloadChoice, NoGpuFallsBackOrFailsNamingTheProbe) {
  int probes = 0;
  PayloadFacts f = all_links(&probes);
  f.gpu = GpuProbe{false, 0, "cudaGetDeviceCount: no driver (cudaErrorInsufficientDriver)"};
  const PayloadChoice c = choose_payload_memory(PayloadRequest::automatic, f);
  EXPECT_EQ(c.kind, MemoryKind::host);
  EXPECT_EQ(c.reason,
            "auto: no usable GPU: cudaGetDeviceCount: no driver (cudaErrorInsufficientDriver)");
  EXPECT_EQ(gpu_error(f),
            "capture.payload_memory gpu: no usable GPU: cudaGetDeviceCount: no driver "
            "(cudaErrorInsufficientDriver); use payload_memory auto or host");
  EXPECT_EQ(probes, 0);  // the RDMA device is not opened for nothing
}

TEST(PayloadChoice, WritersThatCannotStageKeepAutoOnHost) {
  int probes = 0;
  PayloadFacts f = all_links(&probes);
  f.writers_stage = false;
  const PayloadChoice c = choose_payload_memory(PayloadRequest::automatic, f);
  EXPECT_EQ(c.kind, MemoryKind::host);
  EXPECT_NE(c.reason.find("cannot copy GPU payload slots to files"), std::string::npos);
  EXPECT_NE(gpu_error(f).find("no GPU staging"), std::string::npos);
  EXPECT_EQ(probes, 0);
}

TEST(PayloadChoice, FailedRegistrationIsTheReason) {
  PayloadFacts f = all_links(nullptr);
  f.probe_registration = [](int) {
    return RegistrationPath{false, "dma-buf: EOPNOTSUPP; peer memory: EFAULT"};
  };
  const PayloadChoice c = choose_payload_memory(PayloadRequest::automatic, f);
  EXPECT_EQ(c.kind, MemoryKind::host);
  EXPECT_EQ(c.reason,
            "auto: GPU 0: Test GPU found, but the NIC cannot register GPU memory: dma-buf: "
            "EOPNOTSUPP; peer memory: EFAULT");
  EXPECT_NE(gpu_error(f).find("cannot register GPU memory: dma-buf: EOPNOTSUPP; peer memory"),
            std::string::npos);
}

// The GPU chosen for the slabs (not always 0) is the one whose registration is tried and the
// one the choice reports for the slabs and the staging engine.
TEST(PayloadChoice, TheChosenGpuIsProbedAndReported) {
  PayloadFacts f = all_links(nullptr);
  f.gpu = GpuProbe{true, 2, "GPU 1: Test GPU", 1};
  int probed = -1;
  f.probe_registration = [&probed](int gpu) {
    probed = gpu;
    return RegistrationPath{true, "peer memory"};
  };
  const PayloadChoice c = choose_payload_memory(PayloadRequest::automatic, f);
  EXPECT_EQ(probed, 1);
  EXPECT_EQ(c.kind, MemoryKind::gpu);
  EXPECT_EQ(c.gpu, 1);
}

}  // namespace
}  // namespace rocecap::capture::memory
