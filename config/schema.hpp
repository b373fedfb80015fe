// Internal to the loader: the three passes over a run file.
#pragma once

#include "config/loader.hpp"
#include "config/run_config.hpp"
#include "config/yaml_walk.hpp"

namespace rocecap::config {

// Limits shared by the passes.
inline constexpr uint32_t kMinHeaderSplit = 64;  // libmlx5 may inline smaller SGE0s via the CQE
inline constexpr uint32_t kCodifHeadersBytes = 14 + 20 + 8 + 64;  // Ethernet+IPv4+UDP+CODIF
inline constexpr uint32_t kMaxRingDepth = 65536;
inline constexpr uint32_t kMaxVerbsRingDepth = 32768;  // mlx5 max_qp_wr
inline constexpr uint32_t kMaxCqSize = 4194304;        // mlx5 max_cqe
inline constexpr uint32_t kMaxReorderWindow = 1024;
inline constexpr std::size_t kMaxSyncWords = 4;  // codif::SyncSet::kMaxSyncs
inline constexpr unsigned kMaxCpuId = 4095;
// The longest frame an interface delivers is its MTU plus the Ethernet header plus VLAN tags
// (FCS excluded: the NIC strips it). Two tags: the most the capture parser accepts
// (capture/net/packet.hpp kMaxVlanTags), so no frame it would take can be longer than a slot.
inline constexpr uint32_t kEthernetHeaderBytes = 14;
inline constexpr uint32_t kVlanTagBytes = 4;
inline constexpr uint32_t kMaxFrameVlanTags = 2;

// Pass 1: types, keys, enumerations and single-value ranges. Defaults stay where a key is
// absent or wrong (wrong ones are reported, and pass 2 skips what builds on them).
void parse_document(Context& ctx, const Field& root, RunConfig& out);

// Pass 2: rules between fields; fills derived values (cq_size, format-dependent defaults).
void check_consistency(Context& ctx, RunConfig& config);

// Pass 3: this host (CPUs, output directory, replay file).
void check_host(Context& ctx, const HostChecks& host, const RunConfig& config);

}  // namespace rocecap::config
