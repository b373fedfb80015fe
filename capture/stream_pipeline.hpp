// One stream's placement machinery: its ring, its sequencer and the publisher joining them.
// Built at start-up; the capture thread of the stream's interface is its only producer and a
// writer thread its only consumer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "capture/classifier.hpp"
#include "capture/codif/header.hpp"
#include "capture/net/packet.hpp"
#include "capture/retention.hpp"
#include "capture/ring_publisher.hpp"
#include "capture/sequencer.hpp"
#include "capture/stream_ring.hpp"
#include "capture/vdif/header.hpp"
#include "capture/vtp_state.hpp"
#include "common/relaxed_counter.hpp"

namespace rocecap::capture {

enum class StreamFormat : uint8_t { codif, udp, vdif };

// A VDIF stream (doc/vdif.md): how its frames per second are known, whether a VTP sequence
// number precedes each frame, and the one thread it records (kAnyThread: every thread).
struct VdifSpec {
  static constexpr uint32_t kAnyThread = UINT32_MAX;
  vdif::Rate rate;
  bool vtp = false;
  uint32_t thread = kAnyThread;
};

// The last version 3 CODIF header accepted on a stream. Within a stream consecutive headers
// differ in word 0 (frame, seconds) only, so check_frame (frame_check.cpp) can take the next
// one from here instead of decoding and validating it again.
struct CodifMemo {
  static constexpr std::size_t kWordsBytes = 56;  // words 1-7, exactly as received
  std::array<std::byte, kWordsBytes> words{};
  uint32_t payload_bytes = 0;  // UDP payload length it was validated against; 0: empty
  codif::Header header;
  codif::Timing timing;
};

// The last 32-byte VDIF header accepted on a flow's first stream for that stream (doc/vdif.md).
// Within a thread consecutive headers differ in the seconds (word 0 bits 0-29) and the frame
// number (word 1 bits 0-23) only, so Ingest::on_slot can take the next one from here instead of
// decoding and validating it again. Legacy (16-byte) headers are not memoised.
struct VdifMemo {
  static constexpr std::size_t kTailOffset = 7;  // word 1's top byte (epoch), then words 2-7
  static constexpr std::size_t kTailBytes = vdif::kHeaderBytes - kTailOffset;
  std::array<std::byte, kTailBytes> tail{};  // exactly as received
  std::byte word0_top{};                     // word 0 bits 24-31, of which 30-31 are compared
  uint32_t payload_bytes = 0;                // UDP payload length (VTP number included); 0: empty
  codif::Header header;                      // the sequencer's view (capture/vdif/timeline.hpp)
  codif::Timing timing;
};

// The slot meta of frame `f` scattered at `split` (its first `split` bytes in the header slot,
// the rest in the payload slot), but for what is per frame: time stamp, frame index and flags.
// The one place these lengths are worked out: Ingest's copy and slot paths, and the head memo.
inline SlotMeta slot_shape(const net::UdpFrame& f, uint32_t split) noexcept {
  SlotMeta m;
  m.wire_bytes = f.frame_bytes;
  m.header_bytes = f.frame_bytes < split ? f.frame_bytes : split;
  m.payload_bytes = f.frame_bytes - m.header_bytes;
  m.udp_payload_offset = f.payload_offset;
  return m;
}

// The Ethernet/VLAN/IPv4/UDP headers of the last frame accepted on a stream, as words masked
// to the bytes net::parse_udp reads (not the IPv4 TOS, id, TTL and checksum nor the UDP
// checksum, which vary per packet), with what it parsed them to. A frame whose masked words
// and wire length equal these parses to the same UdpFrame and classifies to the same stream,
// so check_frame (frame_check.cpp) takes them from here.
struct UdpMemo {
  static constexpr std::size_t kWords = 6;  // headers up to 48 bytes (42 untagged, 46 tagged)
  std::array<uint64_t, kWords> words{};
  std::array<uint64_t, kWords> mask{};
  bool valid = false;
  std::size_t wire_bytes = 0;
  net::UdpFrame frame;
};

// The UDP memo and the stream's CODIF or VDIF memo as one masked image of a frame's first kBytes
// bytes, rebuilt by memo::refresh_head_memo (capture/head_memo.cpp) whenever one of them
// changes. A frame of wire_bytes whose bytes equal the image wherever the mask is set is what
// both memos accept; the verbs fast lane (Ingest::on_slot) tests that with seven 16-byte masked
// compares instead of the two memo compares with their length and offset checks. Empty
// (kind none) when the memos do not describe one whole header within the header slot.
struct HeadMemo {
  static constexpr std::size_t kBytes = 112;  // 42-48 bytes of headers + a 64-byte CODIF header
  enum class Kind : uint8_t { none, codif, vdif };
  uint32_t wire_bytes = 0;
  uint16_t time_at = 0;  // where the CODIF word 0 (VDIF word 0) begins
  Kind kind = Kind::none;
  bool vtp = false;  // VDIF: the VTP number is the 8 bytes before time_at
  // The slot meta fill_meta gives such a frame, but for the time stamp (frame index and flags
  // are the sequencer's): copied whole, two vector moves where fill_meta took a dozen.
  SlotMeta shape;
  // The sequencer's note that this memo's header and timing have its segment's signature
  // (on_frame_at); reset with the memo, as it vouches for them.
  SignatureNote signature;
  alignas(16) std::array<std::byte, kBytes> image{};
  alignas(16) std::array<std::byte, kBytes> mask{};
};

struct StreamSpec {
  StreamKey key;
  StreamFormat format = StreamFormat::codif;
  codif::SyncSet syncs = codif::SyncSet::defaults();
  RingConfig ring;
  SequencerConfig sequencer;
  VdifSpec vdif;  // format vdif only
};

class StreamPipeline {
 public:
  // Throws std::invalid_argument / std::system_error from the ring or sequencer (start-up).
  StreamPipeline(const StreamSpec& spec, std::unique_ptr<memory::PayloadMemory> payload = nullptr)
      : spec_(spec),
        ring_(spec.ring, std::move(payload)),
        publisher_(ring_),
        sequencer_(spec.sequencer, publisher_) {}
  StreamPipeline(const StreamPipeline&) = delete;
  StreamPipeline& operator=(const StreamPipeline&) = delete;

  const StreamSpec& spec() const noexcept { return spec_; }
  StreamRing& ring() noexcept { return ring_; }
  const StreamRing& ring() const noexcept { return ring_; }
  Sequencer& sequencer() noexcept { return sequencer_; }
  // The sequencer's sink, as its own (final) type: Sequencer::on_frame_at(..., sink).
  RingPublisher& publisher() noexcept { return publisher_; }
  const Sequencer& sequencer() const noexcept { return sequencer_; }
  // The header/payload split point: bytes of a frame that go to the header slot.
  uint32_t split() const noexcept { return spec_.ring.header_slot_bytes; }

  // Capture thread only: arrival bookkeeping for udp-format streams and idle flushing, and
  // the headers check_frame accepted last.
  uint64_t next_udp_index = 0;
  UdpMemo udp_memo;
  int64_t last_arrival_tick = 0;
  // run.start: true until the stream's first frame at or after the start time; frames before
  // it are rejected (before_start). One predictable branch per frame once it is false.
  bool awaiting_start = false;
  CodifMemo codif_memo;
  // VDIF: the next stream of the same UDP flow (another thread; kNoStream: none), the header
  // form the stream started with (0: none yet, 16 or 32 bytes), and the flow's VTP numbers
  // (kept on the flow's first stream: its thread streams share the flow).
  uint32_t next_thread_stream = StreamClassifier::kNoStream;
  uint8_t vdif_header_bytes = 0;
  VtpState vtp;
  VdifMemo vdif_memo;
  HeadMemo head_memo;

  // Triggered dumps (doc/dumps.md): when set, the writer hands written slots here instead of
  // releasing them, so the last retention.retain of the stream stays in the ring.
  std::unique_ptr<Retention> retention;

 private:
  StreamSpec spec_;
  StreamRing ring_;
  RingPublisher publisher_;
  Sequencer sequencer_;
};

}  // namespace rocecap::capture
