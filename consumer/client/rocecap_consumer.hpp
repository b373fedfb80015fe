// rocecap consumer client: read the time-ordered stream rings of a running rocecapd in place
// (doc/consumers.md). One header and one source (rocecap_consumer.cpp), no dependency beyond
// the C++20 standard library and Linux; installed with a CMake package config, so a pipeline
// stage finds it with find_package(rocecap) and links rocecap::consumer.
//
// The first half of this header is the wire and memory contract between rocecapd and every
// client (this library, python/rocecap_consumer.py): rocecapd includes it too, so both sides
// are built from one definition. Everything in shared memory is read-only to a consumer: the
// descriptors are mapped from file descriptors opened O_RDONLY, so mmap(PROT_WRITE,
// MAP_SHARED) is refused by the kernel (EACCES).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace rocecap::consumer {

// ---------------------------------------------------------------------------------------
// The contract (version 1)
// ---------------------------------------------------------------------------------------
namespace abi {

inline constexpr uint64_t kMagic = 0x31534e4f43504352ull;  // "RCPCONS1", little-endian
inline constexpr uint32_t kVersion = 1;
inline constexpr uint32_t kNoSlot = UINT32_MAX;     // Descriptor::slot of a fill frame
inline constexpr std::size_t kMessageBytes = 4096;  // bound of one socket message, both ways
inline constexpr std::size_t kMaxStreamsPerMessage = 1;
inline constexpr int kFdsPerStream = 3;  // control, header slab, payload slab (-1: GPU, none)

// Descriptor::flags. The low byte is rocecapd's slot flags as the raw writer saw them.
enum Flag : uint16_t {
  kInvalid = 1u << 0,       // the frame's own invalid bit is set (kept, as in the raw file)
  kLate = 1u << 1,          // arrived after later frames, placed back in time order
  kSegmentStart = 1u << 2,  // first frame after start or a resynchronisation: no fill before
  kHwTimestamp = 1u << 3,   // timestamp_ns is NIC hardware time
  kFill = 1u << 8,          // a fill frame: header with the invalid bit, zero data, no slot
};

// The first bytes of a stream's control memory. Offsets are from the start of the mapping.
struct ControlHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_size;  // sizeof(ControlHeader)
  uint32_t slots;
  uint32_t log_capacity;    // descriptors in the log, a power of two
  uint64_t header_stride;   // bytes between header slots in the header slab
  uint64_t payload_stride;  // bytes between payload slots in the payload slab
  uint64_t header_slab_bytes;
  uint64_t payload_slab_bytes;
  uint32_t payload_memory;      // 0 host, 1 GPU (CUDA IPC handle in the stream message)
  uint32_t format;              // 0 CODIF, 1 UDP payloads, 2 VDIF
  uint64_t generations_offset;  // slots x uint64_t
  uint64_t log_offset;          // log_capacity x Descriptor
  uint64_t control_bytes;       // the whole mapping
  uint8_t reserved[40];
  alignas(64) std::atomic<uint64_t> write_pos;  // descriptors published so far
  std::atomic<uint32_t> state;                  // kRunning, then kEnded after the last one
  uint32_t pad0;
  std::atomic<uint64_t> frame_index_base;  // informational: frame index of descriptor 0
  uint8_t reserved2[104];                  // to 256 bytes
};
inline constexpr uint32_t kRunning = 0;
inline constexpr uint32_t kEnded = 1;

// One frame of the stream in time order, exactly as the raw file holds it: `header_len` bytes
// of `header` and then `data0_len` bytes at `data0_off` in the header slot and `data1_len`
// bytes at `data1_off` in the payload slot (a fill frame: data1_len zero bytes, no slot).
// seq is written last and first (a sequence lock): a reader that finds seq != its position,
// before or after copying, lost the race to the writer and must count the frame missed.
struct Descriptor {
  std::atomic<uint64_t> seq;      // position in the log; UINT64_MAX while being written
  uint64_t frame_index;           // absolute frame index (CODIF: codif.md; VDIF: vdif.md)
  int64_t timestamp_ns;           // receive time, Unix ns (fill: 0)
  uint64_t generation;            // the slot's generation when published
  uint32_t slot;                  // kNoSlot for a fill frame
  uint16_t flags;                 // Flag bits
  uint16_t header_len;            // bytes of frame header in `header` (CODIF 64, VDIF 16/32, UDP 0)
  uint32_t data0_off, data0_len;  // frame data in the header slot
  uint32_t data1_off, data1_len;  // frame data in the payload slot
  uint64_t retention_pos;         // hold mode: the position to acknowledge (fill: 0)
  uint8_t header[64];             // at offset 64
};

static_assert(sizeof(ControlHeader) == 256);
static_assert(sizeof(Descriptor) == 128);
static_assert(offsetof(ControlHeader, control_bytes) == 80);
static_assert(offsetof(ControlHeader, write_pos) == 128);
static_assert(offsetof(ControlHeader, state) == 136);
static_assert(offsetof(ControlHeader, frame_index_base) == 144);
static_assert(offsetof(Descriptor, frame_index) == 8);
static_assert(offsetof(Descriptor, slot) == 32);
static_assert(offsetof(Descriptor, retention_pos) == 56);
static_assert(offsetof(Descriptor, header) == 64);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

inline constexpr uint64_t kWriting = UINT64_MAX;

}  // namespace abi

// ---------------------------------------------------------------------------------------
// The client library
// ---------------------------------------------------------------------------------------

enum class Mode { lossy, hold };

struct StreamInfo {
  uint32_t index = 0;              // rocecapd's stream number (as in metrics and the manifest)
  std::string name;                // "<antenna>@<group>:<port>"
  std::string format;              // codif, udp, vdif
  std::string payload_memory;      // host or gpu
  std::string cuda_ipc_handle;     // hex of cudaIpcMemHandle_t when payload_memory is gpu
  uint64_t cuda_offset = 0;        // where the payload slab starts in that allocation
  uint64_t position = UINT64_MAX;  // rocecapd's log position when it attached us (live start)
  int gpu_device = -1;             // CUDA device ordinal in rocecapd (gpu)
};

// One frame handed out by Stream::next(). Host views point into the mapped read-only memory:
// valid only while Stream::still_valid(frame) says so; copy what you keep, then check.
struct Frame {
  uint64_t position = 0;     // place in the stream's descriptor log
  uint64_t frame_index = 0;  // absolute frame index
  int64_t timestamp_ns = 0;
  uint16_t flags = 0;  // abi::Flag bits
  bool fill() const noexcept { return (flags & abi::kFill) != 0; }
  std::span<const std::byte> header;  // frame header (a copy kept in the Frame)
  std::span<const std::byte> data0;   // data in the header slot (host memory)
  std::span<const std::byte> data1;   // data in the payload slot (host); empty for fill/GPU
  uint64_t data1_offset = 0;          // of data1 in the payload slab (for GPU readers)
  uint32_t data1_len = 0;             // bytes of data1 (also for GPU and fill frames)
  uint32_t slot = abi::kNoSlot;
  uint64_t generation = 0;
  uint64_t retention_pos = 0;
  std::array<std::byte, 64> header_copy{};
  // Bytes of the whole frame as the raw file holds it.
  std::size_t size() const noexcept { return header.size() + data0.size() + data1_len; }
};

enum class Event {
  none,    // nothing new yet
  frame,   // a frame is in the Frame
  missed,  // frames were overwritten before they were read: Frame::frame_index is the first,
           // Stream::last_missed() how many (fill frames included)
  ended,   // rocecapd ended the run and everything published was handed out
};

class Stream {
 public:
  // Maps the descriptors read-only (payload_fd -1: GPU payload, not mapped) and checks the
  // control header; throws std::runtime_error naming a mismatch. The descriptors stay the
  // caller's: they may be closed once the Stream exists.
  Stream(StreamInfo info, int control_fd, int header_fd, int payload_fd);
  ~Stream();
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const StreamInfo& info() const noexcept { return info_; }
  // The next event. Never blocks. A frame whose slot was reused while next() looked at it is
  // reported as missed, never returned.
  Event next(Frame& f) noexcept;
  // Whether the slot still holds what `f` describes: call after reading its data; false means
  // the bytes read may be torn: drop them and count the frame missed (count_torn()).
  bool still_valid(const Frame& f) const noexcept;
  // Copies the whole frame (header, data, zeros for fill) into `out` (at least f.size()
  // bytes) and checks it is still valid; false: torn, counted missed, `out` is rubbish.
  bool copy(const Frame& f, std::span<std::byte> out) noexcept;
  void count_torn(const Frame& f) noexcept;

  uint64_t last_missed() const noexcept { return last_missed_; }  // after Event::missed
  uint64_t frames_read() const noexcept { return read_; }
  uint64_t frames_missed() const noexcept { return missed_; }
  uint64_t position() const noexcept { return next_pos_; }
  // Skips to what is published from now on.
  void seek_live() noexcept;
  // To where rocecapd attached us (StreamInfo::position; ConnectOptions::start live).
  void seek_attached() noexcept;
  // Goes back to the oldest descriptor the log still holds (whose slots may be reused already:
  // those are reported missed, never returned).
  void seek_oldest() noexcept;
  uint64_t published() const noexcept;  // the writer's position
  uint64_t lag() const noexcept { return published() - next_pos_; }
  // Hold mode: what was acknowledged can be released (Client::acknowledge sends it).
  uint64_t ack_position() const noexcept { return ack_pos_; }
  void done_with(const Frame& f) noexcept;
  const abi::ControlHeader& control() const noexcept;
  // The payload slab (host memory), empty when it is in GPU memory.
  std::span<const std::byte> payload_slab() const noexcept { return payload_; }

 private:
  void unmap() noexcept;
  StreamInfo info_;
  std::span<const std::byte> control_, header_, payload_;
  const abi::ControlHeader* ctl_ = nullptr;
  const std::atomic<uint64_t>* gens_ = nullptr;
  const abi::Descriptor* log_ = nullptr;
  uint64_t next_pos_ = 0;
  uint64_t expect_index_ = 0;
  bool have_index_ = false;
  uint64_t read_ = 0, missed_ = 0, last_missed_ = 0;
  uint64_t ack_pos_ = 0;
};

// Where a new consumer starts reading: at what rocecapd publishes from now on (live), or at the
// oldest descriptor still in the log (whose slots may be gone already: counted missed).
enum class Start { live, oldest };

struct ConnectOptions {
  std::string socket;                // rocecapd's consumers.socket
  std::vector<std::string> streams;  // names or antenna names; empty: every allowed stream
  Mode mode = Mode::lossy;
  Start start = Start::live;
  std::string name = "client";  // shown in rocecapd's log and metrics
};

class Client {
 public:
  // Connects and maps the streams; throws std::runtime_error with rocecapd's reason.
  explicit Client(const ConnectOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  std::vector<Stream>& streams() noexcept { return streams_; }
  // Tells rocecapd how far each stream was read (its metrics) and, in hold mode, what it may
  // release. Non-blocking; call every few ms to s. False once rocecapd closed the connection
  // (hold mode: the consumer was detached for passing its bound).
  bool report();
  // Whether rocecapd is still connected (false after it detached us or ended).
  bool connected() const noexcept { return fd_ >= 0; }
  std::string detach_reason() const { return detach_reason_; }

 private:
  int fd_ = -1;
  std::vector<Stream> streams_;
  std::string detach_reason_;
};

}  // namespace rocecap::consumer
