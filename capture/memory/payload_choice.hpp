// Where the payload slabs of a run live, decided once at start-up from what was asked for
// (capture.payload_memory) and what this host and build can do. `auto` takes GPU memory only
// when every link works (a NIC that scatters, a usable GPU, writers that can stage GPU slots
// to files, and a way to register GPU memory with the NIC), else host memory; `gpu` that
// cannot be satisfied is a start-up error naming the missing link. Either way the reason is
// one line for the log, the manifest and rocecap_build_info.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include "capture/memory/cuda_runtime.hpp"
#include "capture/memory/payload_memory.hpp"

namespace rocecap::capture::memory {

enum class PayloadRequest : uint8_t { automatic, host, gpu };

// Result of trying to register a GPU buffer with the NIC (dma-buf, then peer memory).
struct RegistrationPath {
  bool ok = false;
  std::string detail;  // ok: the method ("dma-buf", "peer memory"); else why each one failed
};

struct PayloadFacts {
  bool nic_scatters = false;   // verbs: the NIC writes slots; the pcap backends copy with the CPU
  bool writers_stage = false;  // the writers can copy GPU payload slots to host for the files
  GpuProbe gpu;
  // Called only when everything before it allows GPU memory: registers slabs of the run's
  // real number and sizes on GPU facts.gpu.device with every RDMA device, all held at once
  // (they share the GPU's BAR1 window), so `auto` falls back before any ring exists.
  std::function<RegistrationPath(int gpu)> probe_registration;
};

struct PayloadChoice {
  MemoryKind kind = MemoryKind::host;
  std::string reason;
  int gpu = 0;  // kind gpu: the CUDA device of the slabs (facts.gpu.device)
};

// Thrown for `gpu` that cannot be satisfied; the message starts "capture.payload_memory gpu:".
class PayloadMemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

PayloadChoice choose_payload_memory(PayloadRequest request, const PayloadFacts& facts);

}  // namespace rocecap::capture::memory
