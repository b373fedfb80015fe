// The keys of a run file, per map: the one list the loader accepts (every MapView of pass 1 is
// built from it, so a key not listed here is refused as unknown) and the list the manual page
// rocecap-run.yaml(5) is checked against (tests/unit/run_file_manual_test.cpp), so the two
// cannot drift apart.
#pragma once

#include <span>
#include <string_view>

namespace rocecap::config::schema {

inline constexpr std::string_view kRoot[] = {"run",     "capture", "streams",   "output",
                                             "metrics", "logging", "retention", "consumers"};
inline constexpr std::string_view kRun[] = {"name", "duration", "packets", "start"};
inline constexpr std::string_view kCapture[] = {
    "backend", "interfaces", "ring_depth", "header_split", "max_frame",   "payload_memory", "gpu",
    "cq_size", "poll_mode",  "pcap_file",  "replay_pace",  "pcap_reader", "zero_copy"};
inline constexpr std::string_view kInterface[] = {"name", "device", "groups", "capture_cpu"};
inline constexpr std::string_view kGroup[] = {"address", "port"};
inline constexpr std::string_view kStreams[] = {
    "format",      "sync", "antennas", "frames_per_second",
    "sample_rate", "vtp",  "threads",  "frequencies"};
inline constexpr std::string_view kSync[] = {"word", "layout"};
inline constexpr std::string_view kFrequency[] = {
    "group",   "thread", "centre_mhz", "bandwidth_mhz", "channels_mhz", "channel_bandwidth_mhz",
    "sideband"};
inline constexpr std::string_view kAntenna[] = {"name", "source"};
inline constexpr std::string_view kOutput[] = {
    "directory",      "directories",        "formats",     "rotate",
    "name_template",  "pcap_name_template", "fill_gaps",   "strip_headers",
    "reorder_window", "direct_io",          "writer_cpu",  "writer_threads",
    "writer_cpus",    "io_uring",           "preallocate", "fsync_rotated"};
inline constexpr std::string_view kMetrics[] = {"enabled", "listen"};
inline constexpr std::string_view kLogging[] = {"level"};
inline constexpr std::string_view kRetention[] = {"retain",     "frame_rate",     "pin_headroom",
                                                  "max_future", "write_rate",     "formats",
                                                  "socket",     "http_token_file"};

inline constexpr std::string_view kConsumers[] = {
    "socket",        "streams",    "keep",  "hold_frames", "hold_time",
    "max_consumers", "log_frames", "group", "wait_for",    "wait_time"};

// One map of the document: its path as the manual writes it ("" for the top level, "[]" for
// "each item of the list"), and its keys.
struct Map {
  std::string_view path;
  std::span<const std::string_view> keys;
};

inline constexpr Map kMaps[] = {
    {"", kRoot},
    {"run", kRun},
    {"capture", kCapture},
    {"capture.interfaces[]", kInterface},
    {"capture.interfaces[].groups[]", kGroup},
    {"streams", kStreams},
    {"streams.sync[]", kSync},
    {"streams.antennas[]", kAntenna},
    {"streams.frequencies[]", kFrequency},
    {"output", kOutput},
    {"metrics", kMetrics},
    {"logging", kLogging},
    {"retention", kRetention},
    {"consumers", kConsumers},
};

}  // namespace rocecap::config::schema
