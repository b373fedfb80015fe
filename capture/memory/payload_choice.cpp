#include "capture/memory/payload_choice.hpp"

namespace rocecap::capture::memory {
namespace {

// `auto` falls back to host with the reason; `gpu` fails with it.
PayloadChoice refuse(PayloadRequest request, const std::string& why) {
  if (request == PayloadRequest::gpu) {
    throw PayloadMemoryError("capture.payload_memory gpu: " + why +
                             "; use payload_memory auto or host");
  }
  return PayloadChoice{MemoryKind::host, "auto: " + why};
}

}  // namespace

PayloadChoice choose_payload_memory(PayloadRequest request, const PayloadFacts& facts) {
  if (!facts.nic_scatters) {
    if (request == PayloadRequest::gpu) {
      throw PayloadMemoryError(
          "capture.payload_memory gpu: the pcap backends copy each frame with the CPU, which "
          "cannot write GPU memory; GPU payload memory needs capture.backend verbs");
    }
    return PayloadChoice{MemoryKind::host, "the pcap backends copy each frame into host memory"};
  }
  if (request == PayloadRequest::host) return PayloadChoice{MemoryKind::host, "configured: host"};
  if (!facts.gpu.usable) return refuse(request, "no usable GPU: " + facts.gpu.detail);
  if (!facts.writers_stage) {
    return refuse(request, facts.gpu.detail +
                               " found, but the writers of this build cannot copy GPU payload "
                               "slots to files (no GPU staging)");
  }
  RegistrationPath reg;
  if (facts.probe_registration) {
    reg = facts.probe_registration(facts.gpu.device);
  } else {
    reg.detail = "no registration probe";
  }
  if (!reg.ok) {
    return refuse(request, facts.gpu.detail +
                               " found, but the NIC cannot register GPU memory: " + reg.detail);
  }
  const std::string how = facts.gpu.detail + ", registered with the NIC through " + reg.detail;
  return PayloadChoice{MemoryKind::gpu,
                       request == PayloadRequest::gpu ? "configured: gpu; " + how : "auto: " + how,
                       facts.gpu.device};
}

}  // namespace rocecap::capture::memory
