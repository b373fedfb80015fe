// The one place rocecapd names its capture backends (capture.backend: pcap, pcap-file, verbs).
// Everything else in the daemon (the capture loop, reports, metrics) sees a
// capture::PacketSource and nothing transport-specific; a new backend is a new case here.
//
// The steps follow build_runtime (run_assembly.hpp): check, choose the payload memory,
// prepare, build rings and writers, then open the sources last.
#pragma once

#include <spdlog/logger.h>

#include <cstddef>
#include <functional>
#include <memory>

#include "capture/memory/payload_choice.hpp"
#include "config/run_config.hpp"

namespace rocecap::daemon {

struct InterfaceRuntime;

// Before anything is built: what the backend needs of this process and of the run file
// (privileges, one interface per RDMA device, a build with the backend in it). Throws
// std::runtime_error saying what is missing and how to fix it.
void check_backend(const config::RunConfig& cfg);

// The payload-memory facts only the backend knows: whether the NIC scatters into the slots,
// and how to probe that GPU payload slabs of these sizes register with every device.
// `slab_bytes` gives a stream's payload slab size.
using SlabBytes = std::function<std::size_t(const config::StreamRef&)>;
void backend_payload_facts(const config::RunConfig& cfg, const SlabBytes& slab_bytes,
                           capture::memory::PayloadFacts& facts);

// Once the payload memory is chosen, before any ring is built: the memory the backend will
// lock (RLIMIT_MEMLOCK), and device settings the choice needs. Throws std::runtime_error.
void prepare_backend(const config::RunConfig& cfg, capture::memory::MemoryKind payload);

// Opens interface `index`'s source for ir.ingest's streams (ir.source), then joins its
// multicast groups where the backend receives through the kernel's membership (ir.join).
// Throws std::runtime_error naming the interface, device or file that failed.
void open_source(const config::RunConfig& cfg, std::size_t index, InterfaceRuntime& ir,
                 const std::shared_ptr<spdlog::logger>& log);

}  // namespace rocecap::daemon
