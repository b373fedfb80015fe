// The validated configuration of one observing run: plain structs, filled only by the loader
// (config/loader.hpp) after every check passed. Everything downstream (capture, writers, daemon)
// reads these and never YAML. Addresses and ports are in host byte order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rocecap::config {

enum class Backend : uint8_t { verbs, pcap, pcap_file };
enum class PayloadMemory : uint8_t { automatic, host, gpu };  // YAML: auto | host | gpu
enum class PollMode : uint8_t { busy_poll, event };
enum class ReplayPace : uint8_t { fast, recorded };
// pcap: who reads the kernel's packet ring (capture/packet/packet_ring_source.hpp).
enum class PcapReader : uint8_t { libpcap, packet_ring };
enum class StreamFormat : uint8_t { codif, udp, vdif };

enum class CodifLayout : uint8_t { v3, v1 };
enum class OutputFormat : uint8_t { raw, codifhdr, pcap, vdifhdr };
enum class LogLevel : uint8_t { trace, debug, info, warn, error, critical, off };

// YAML spellings ("pcap-file", "auto", "busy_poll", ...).
std::string_view to_string(Backend v) noexcept;
std::string_view to_string(PayloadMemory v) noexcept;
std::string_view to_string(PollMode v) noexcept;
std::string_view to_string(ReplayPace v) noexcept;
std::string_view to_string(PcapReader v) noexcept;
std::string_view to_string(StreamFormat v) noexcept;
std::string_view to_string(CodifLayout v) noexcept;
std::string_view to_string(OutputFormat v) noexcept;
std::string_view to_string(LogLevel v) noexcept;

struct RunSection {
  std::string name;                                  // [A-Za-z0-9._-], used in paths and labels
  std::optional<std::chrono::nanoseconds> duration;  // stop after; none: run until stopped
  std::optional<uint64_t> packets;                   // stop after this many packets, all streams
  // Frames that start before this UTC second (Unix ns) are not part of the run: rejected as
  // before_start, so hosts started at slightly different moments share their first frame.
  std::optional<int64_t> start;
};

struct GroupConfig {
  uint32_t address = 0;  // IPv4 multicast group
  uint16_t port = 0;     // UDP destination port
};

struct InterfaceConfig {
  std::string name;    // netdev name (pcap-file: a label for the streams)
  std::string device;  // verbs: RDMA device (e.g. mlx5_0); empty: found from name
  std::vector<GroupConfig> groups;
  std::optional<unsigned> capture_cpu;
};

struct CaptureSection {
  Backend backend = Backend::verbs;
  std::vector<InterfaceConfig> interfaces;
  uint32_t ring_depth = 4096;   // slots per stream (= receive queue depth with verbs)
  uint32_t header_split = 128;  // bytes of each frame kept in the host header slot
  uint32_t max_frame = 9216;    // largest Ethernet frame accepted (header + payload slot)
  PayloadMemory payload_memory = PayloadMemory::automatic;
  // GPU of the payload slabs: "" = the one nearest the interfaces' NICs (PCIe, then NUMA);
  // a CUDA device index ("1"); or a PCI bus id ("0000:3b:00.0", as nvidia-smi prints it).
  std::string gpu;
  uint32_t cq_size = 0;  // verbs: entries of each device's shared CQ (loader resolves it); else 0
  PollMode poll_mode = PollMode::busy_poll;
  std::string pcap_file;  // pcap-file: the capture to replay (absolute path)
  ReplayPace replay_pace = ReplayPace::fast;
  // pcap only. packet_ring since issue 17's ladder (BENCHMARKS.md, "Kernel path"): less CPU
  // per packet and a higher loss-free rate than libpcap's reader on the same traffic.
  PcapReader pcap_reader = PcapReader::packet_ring;
  bool zero_copy = true;  // pcap_reader packet_ring: payload left in the kernel's blocks
};

struct SyncWord {
  uint32_t word = 0;
  CodifLayout layout = CodifLayout::v3;
};

struct Antenna {
  std::string name;     // [A-Za-z0-9_-], used in file names and metric labels
  uint32_t source = 0;  // IPv4 unicast source address
};

enum class Sideband : uint8_t { upper, lower };
std::string_view to_string(Sideband v) noexcept;

// The sky frequencies one group carries (streams.frequencies, doc/dumps.md): a centre and a
// bandwidth, or each channel's edge frequency with the sideband (upper: the channel spans
// [edge, edge + channel_bandwidth), lower: (edge - channel_bandwidth, edge]). A frame carries
// every channel of its group, so what a stream spans is [low_mhz, high_mhz], the union.
struct GroupFrequencies {
  uint32_t address = 0;  // the group, as in capture.interfaces[].groups[]
  uint16_t port = 0;
  std::optional<uint16_t> thread;  // VDIF: this listed thread only; none: every stream of it
  double centre_mhz = 0, bandwidth_mhz = 0;  // the first form (0: not given)
  std::vector<double> channels_mhz;          // the second form
  double channel_bandwidth_mhz = 0;
  Sideband sideband = Sideband::upper;
  double low_mhz = 0, high_mhz = 0;  // derived by the loader from either form
};

struct FrequencyRange {
  double low_mhz = 0, high_mhz = 0;
};

struct StreamsSection {
  StreamFormat format = StreamFormat::codif;
  std::vector<SyncWord> sync;  // codif: 1..4 words; default FEEDCAFE (v3) and ABADDEED (v1)
  std::vector<Antenna> antennas;
  // vdif (doc/vdif.md): frames per second, or the sample rate (per channel) they follow from;
  // exactly one of the two is non-zero. vtp: an 8-byte VTP sequence number precedes each frame.
  uint64_t frames_per_second = 0;
  uint64_t sample_rate = 0;
  bool vtp = false;
  // The VDIF threads to record, each its own stream; empty: one stream takes every thread.
  std::vector<uint16_t> threads;
  std::vector<GroupFrequencies> frequencies;  // empty: the run does not know its frequencies
};

struct OutputSection {
  std::string directory;                 // absolute; with directories: the first of them
  std::vector<std::string> directories;  // output targets ({directory} with one); the first
                                         // holds the run's lock and manifest
  std::vector<OutputFormat> formats;     // no repeats; the loader's default is {raw}
  uint64_t rotate_bytes = uint64_t{4} << 30;
  // Relative to directory; placeholders in config/name_template.hpp.
  std::string name_template = "{run}/{group}_{port}_{antenna}.{seq:04}.{ext}";  // per stream
  std::string pcap_name_template = "{run}/{interface}.{seq:04}.pcap";           // per interface
  bool fill_gaps = true;        // codif raw: write fill frames for lost frames
  bool strip_headers = false;   // codif raw: data only, no 64-byte headers
  uint32_t reorder_window = 8;  // frames
  bool direct_io = false;
  std::optional<unsigned> writer_cpu;
  // Writer pool (issue 12): threads (0: chosen from streams and targets, see
  // daemon/lib/run/writer_pool.hpp) and the CPU of each, in order (writer_cpu: the one-entry form).
  uint32_t writer_threads = 0;
  std::vector<unsigned> writer_cpus;
  bool io_uring = true;     // O_DIRECT files through io_uring where the kernel allows it
  bool preallocate = true;  // fallocate each file's rotate size at open (not on tmpfs)
  // fsync each file when rotation closes it; false: one syncfs per file system at the end
  // (each fsync flushes the disk's cache, which then writes nothing: doc/operations.md)
  bool fsync_rotated = false;
};

struct MetricsSection {
  bool enabled = true;
  uint32_t address = 0x7F000001;  // 127.0.0.1
  uint16_t port = 9464;
};

struct LoggingSection {
  LogLevel level = LogLevel::info;
};

// Triggered dumps (doc/dumps.md): keep the last `retain` of every stream in its ring and write
// a window of it on request. Absent section: enabled = false.
struct RetentionSection {
  bool enabled = false;
  std::chrono::nanoseconds retain{0};
  double frame_rate = 0;  // frames per second per stream (sizes the rings: retain x rate)
  std::chrono::nanoseconds pin_headroom{0};  // extra ring slots for pinned dumps; default retain/4
  std::chrono::nanoseconds max_future = std::chrono::seconds(10);  // furthest window end ahead
  uint64_t write_rate = uint64_t{256} << 20;                       // dump bytes per second, at most
  std::vector<OutputFormat> formats{OutputFormat::raw};
  std::string socket;           // trigger socket; empty: <output.directory>/<run>/trigger.sock
  std::string http_token_file;  // the HTTP endpoint's token; empty: none
};

// Consumers (doc/consumers.md): other processes read the stream rings in place through a Unix
// socket. Absent section: enabled = false.
struct ConsumersSection {
  bool enabled = false;
  std::string socket;                // required: the consumer socket, an absolute path
  std::vector<std::string> streams;  // stream or antenna names consumers may read; empty: all
  uint64_t keep = 0;                 // frames each stream keeps for consumers; 0: ring_depth / 4
  uint64_t hold_frames = 0;  // most frames a hold-mode consumer pins per stream; 0: ring_depth / 4
  std::chrono::nanoseconds hold_time = std::chrono::seconds(1);  // ... and for at most this long
  uint64_t max_consumers = 16;
  uint64_t log_frames = 0;  // descriptors per stream log; 0: 4 x the ring's slots, power of two
  std::string group;        // the socket's group (mode 0660); empty: the service user's group
  uint64_t wait_for = 0;    // consumers to wait for before capture starts
  std::chrono::nanoseconds wait_time = std::chrono::seconds(30);  // ... for at most this long
};

struct RunConfig {
  std::string source_path;  // the YAML file as given
  std::string source_text;  // its bytes, for the run manifest's config snapshot
  RunSection run;
  CaptureSection capture;
  StreamsSection streams;
  OutputSection output;
  MetricsSection metrics;
  LoggingSection logging;
  RetentionSection retention;
  ConsumersSection consumers;
};

// One stream = (interface, group, antenna[, VDIF thread]): indices into the config's vectors.
struct StreamRef {
  std::size_t interface = 0;
  std::size_t group = 0;  // into capture.interfaces[interface].groups
  std::size_t antenna = 0;
  std::size_t thread = 0;  // into streams.threads (0 when the list is empty)
};

// Every stream of the run, interface by interface, group by group, antenna by antenna, thread
// by thread.
std::vector<StreamRef> enumerate_streams(const RunConfig& config);
// How many streams interface `i` has (groups x antennas x listed VDIF threads, at least one),
// and the whole run: enumerate_streams(config).size() without building the list.
uint64_t interface_streams(const RunConfig& config, std::size_t i) noexcept;
uint64_t count_streams(const RunConfig& config) noexcept;
// capture.pcap_reader packet_ring (backend pcap): the kernel receive ring of interface `i`, as
// large as its zero-copy rings need (packet_ring_geometry.hpp), and of every interface; 0 with
// another reader or backend.
uint64_t interface_kernel_ring_bytes(const RunConfig& config, std::size_t i) noexcept;
uint64_t kernel_ring_bytes(const RunConfig& config) noexcept;

bool has_format(const OutputSection& output, OutputFormat format) noexcept;

// What stream `ref` spans in the sky (streams.frequencies: its group's entry for its VDIF
// thread, else the group's entry without a thread); nullopt when the run file does not say.
std::optional<FrequencyRange> stream_frequencies(const RunConfig& config, const StreamRef& ref);
// The top of the run's band: the highest frequency of streams.frequencies; nullopt: none given.
std::optional<double> top_of_band_mhz(const RunConfig& config) noexcept;

}  // namespace rocecap::config
