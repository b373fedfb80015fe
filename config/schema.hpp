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
// The largest CQ a ConnectX makes (max_cqe 2^22 - 1): libmlx5 asks the kernel for
// roundup_pow2(cq_size + 1) entries (providers/mlx5/verbs.c create_cq, align_queue_size), which
// must not exceed 2^22, so 4194304 would need 2^23. A bound on cq_size itself says the same as
// checking the rounded value and reads plainly in the error; start-up checks the real device's
// max_cqe with the same rounding (capture/verbs/cq_size.hpp).
inline constexpr uint32_t kMaxCqSize = 4194303;
// Ethernet+IPv4+UDP+VDIF (doc/vdif.md); + 8 with the VTP sequence number.
inline constexpr uint32_t kVdifHeadersBytes = 14 + 20 + 8 + 32;
inline constexpr uint32_t kVtpBytes = 8;
inline constexpr uint32_t kMaxReorderWindow = 1024;
inline constexpr std::size_t kMaxSyncWords = 4;  // capture::codif::SyncSet::kMaxSyncs
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

// Part of pass 2: output.writer_cpu / writer_cpus / writer_threads against each other and the
// threads the run can use (check_writers.cpp); fills writer_threads from writer_cpus.
void check_writer_plan(Context& ctx, RunConfig& config);
// output.directories: none listed twice under two spellings, none inside another; resolve:
// compare what they resolve to on this host (symlinks), else the normalised paths.
void check_target_identity(Context& ctx, const OutputSection& output, bool resolve);

// Part of pass 2: the VDIF keys (streams.frames_per_second, sample_rate, vtp, threads), the
// header split they need, vdifhdr output, and the default file names of several threads.
void check_vdif(Context& ctx, RunConfig& config);
// streams.frequencies (parse_frequencies.cpp): pass 1, and its rules for pass 2.
void parse_frequencies(Context& ctx, const std::optional<Field>& f, StreamsSection& out);
void check_frequencies(Context& ctx, const RunConfig& config);
// The `retention` section (parse_retention.cpp): pass 1, and its rules for pass 2.
void parse_retention(Context& ctx, const Field& f, RetentionSection& out);
void check_retention(Context& ctx, const RunConfig& config);
// The `consumers` section (parse_consumers.cpp).
void parse_consumers(Context& ctx, const Field& f, ConsumersSection& out);
void check_consumers(Context& ctx, const RunConfig& config);

// Pass 3: this host (CPUs, output directory, replay file).
void check_host(Context& ctx, const HostChecks& host, const RunConfig& config);

}  // namespace rocecap::config
