// The consumer side of one interface's stream rings: takes published slots and writes them to
// the run's files, on the writer thread, then releases the slots so the capture side can reuse
// them (doc/design.md data path).
//
// Per stream: raw (CODIF frames in time order, fill frames where the sequencer found gaps, so
// file offset is a function of time) and codifhdr. Per interface: pcap, in arrival order (the
// interface's arrival queue, capture/arrival_queue.hpp), so record times never go backwards
// although the sequencer hands raw frames over in time order after its reorder window.
//
// Ordering rule that keeps slots alive long enough: each pass first pops the published slots,
// then drains the arrival queue (a slot's arrival is queued before its publication, so every
// popped slot's pcap record is written in this pass), and only then writes raw/codifhdr and
// releases.
//
// With pcap (host payloads), a pass does not hold every slot until its whole drain is written:
// after a storage stall the arrival queue holds up to every slot of the interface (hundreds of
// MB), and the rings stayed full, dropping, for as long as the disk took to write it all. The
// drain goes in steps of `batch` arrivals per stream; after each step the published slots are
// popped and those whose pcap record is written released, in publication order (the stream's popped
// slots are held until the oldest is recorded: raw files and retention see publication order as
// before). The slots popped before the pass's drain are released at its end in any case (their
// arrivals were in it), so a lost arrival (ArrivalQueue overflow, counted by the Ingest) never
// holds a slot. Rests on: every arrival's slot is published once and never given back
// (Ingest::sequence records the arrival only for a placed frame, after every give_back).
//
// GPU payloads: when any ring's payload memory is GPU memory (or the options force it), the CPU
// never reads a payload slot. Each pass hands the slots it took (pcap arrivals first, then each
// stream's frames) to a PayloadStager, which copies their payloads into pinned host buffers and
// calls back per frame with the staged payload; the writers get header slot + staged payload
// exactly as they would get header slot + payload slot, so the files are the same bytes. The
// slots are released only after stage() returned, i.e. after their copies completed.
// A stream without raw or codifhdr files is not staged (its frames only update the state);
// with pcap and raw both on, a payload is copied twice: once in arrival, once in time order.
// A frame whose copy failed is not written (raw: the next frame fills its place; the error is
// reported once per run of failures).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "capture/arrival_queue.hpp"
#include "capture/stream_pipeline.hpp"
#include "writers/codif_header_writer.hpp"
#include "writers/consumer_log.hpp"
#include "writers/pcap_writer.hpp"
#include "writers/raw_writer.hpp"
#include "writers/staging/payload_stager.hpp"
#include "writers/vdif_header_writer.hpp"

namespace rocecap::writers {

struct StreamWriters {
  std::optional<RawWriter> raw;
  std::optional<CodifHeaderWriter> codifhdr;
  std::optional<VdifHeaderWriter> vdifhdr;
};

struct CaptureWriterOptions {
  bool fill_gaps = true;
  std::size_t batch = 256;               // slots popped per stream per pass
  std::size_t max_gaps_listed = 100000;  // per stream, for the manifest; the rest counted
  // Stage payloads although every ring is host memory (tests, and checking the staging path
  // on hosts without a GPU).
  bool force_staging = false;
  staging::StagingOptions staging{};
  // The engine to stage with; empty: staging::make_copy_engine for the rings' memory kind.
  std::function<std::unique_ptr<staging::CopyEngine>()> copy_engine;
  // Without staging, raw and pcap files that are not O_DIRECT are written with writev straight
  // from the header and payload slots (issue 17: no staging copy); the slots are released only
  // after the writes. false: every byte is copied into the staging buffer first (as before).
  bool borrow_payloads = true;
};

// The part of one CaptureWriter that one writer thread polls: some of its streams, and the pcap
// writer with all of them (pcap records need every stream's slots in the same pass, so an
// interface with pcap output, or one that stages GPU payloads, is never split).
struct WriterShard {
  std::vector<std::size_t> streams;
  bool pcap = false;
};

// Writer-thread state of one stream, read by the same thread for the manifest.
struct StreamWriteState {
  bool started = false;
  uint64_t last_index = 0;
  uint64_t frames = 0;  // received frames handed to the writers
  std::vector<capture::GapEvent> gaps;
  uint64_t gaps_not_listed = 0;
};

// Called on the writer thread once for each file a write error broke (the writers return each
// error once); the caller logs it and records it in the manifest.
using WriteErrorReporter = std::function<void(const Status&)>;

// How often the writer loop hands every file's buffered bytes to the kernel (flush()). Raw
// files of the usual path go out at every pass (writev before the slots are released); header
// files (64 bytes a frame: a 1 MiB staging buffer is 16384 frames, seconds of a stream) and the
// copying paths (O_DIRECT, staged GPU payloads) would otherwise keep that much in memory, all
// of it lost to a SIGKILL, and cut from a file that fails (a full disk) although received long
// before. Half a second: a kill loses at most that (plus one writer pass) of any file; for
// 200 streams x 2 formats that is 800 write() calls a second more, against one per 1 MiB.
inline constexpr std::chrono::milliseconds kFlushInterval{500};

class CaptureWriter {
 public:
  // `streams` are the interface's streams (not owned; they outlive the writer), per_stream[i]
  // belongs to streams[i]. `arrivals` is the interface's arrival queue (the producer's,
  // e.g. Ingest::arrivals()), needed by a pcap writer, else may be null. Throws
  // std::invalid_argument when these do not fit, and std::runtime_error when staging is
  // needed and no copy engine can be made (a build without CUDA, say).
  CaptureWriter(std::vector<capture::StreamPipeline*> streams, capture::ArrivalQueue* arrivals,
                std::vector<StreamWriters> per_stream, std::optional<PcapWriter> pcap,
                const CaptureWriterOptions& options, WriteErrorReporter on_error);

  // One pass over every stream; returns the number of slots written and released.
  std::size_t poll();
  // Every writer starts a new file at its next record (SIGHUP).
  void request_rotation() noexcept;
  // Reports (once per file) every open file that was unlinked under the writer, and the files
  // gone with a lost output target (RotatingFile::check_storage): a few fstat() calls, for the
  // writer loop to run about once a second, never per frame.
  void check_storage();
  // Hands what every file buffers to the kernel (RotatingFile::flush): for the writer loop
  // every kFlushInterval, never per frame. Failures go to the error reporter.
  void flush();
  // Closes every file (flush + fsync); each failure also goes to the error reporter.
  // The first error, if any.
  Status close();

  // The same for one shard, from the one thread that owns it (writer pool). Shards of one
  // writer must not overlap; a split writer (splittable()) has no pcap and no stager.
  std::size_t poll(const WriterShard& shard);
  void request_rotation(const WriterShard& shard) noexcept;
  void check_storage(const WriterShard& shard);
  void flush(const WriterShard& shard);
  Status close(const WriterShard& shard);
  // Whether the streams may be polled by different threads.
  bool splittable() const noexcept { return !pcap_ && !stager_; }
  // Every stream and the pcap writer: what poll() covers.
  const WriterShard& whole() const noexcept { return whole_; }

  std::size_t streams() const noexcept { return per_stream_.size(); }
  const StreamWriteState& state(std::size_t stream) const { return state_.at(stream); }
  StreamWriters& writers(std::size_t stream) { return per_stream_.at(stream); }
  PcapWriter* pcap() noexcept { return pcap_ ? &*pcap_ : nullptr; }
  // Start-up: stream `stream`'s frames are also published to consumers (doc/consumers.md),
  // in written order, just before they are released or retained. Not owned.
  void set_consumer_log(std::size_t stream, ConsumerLog* log) { consumer_logs_.at(stream) = log; }
  // Null when payloads are written straight from the ring.
  const staging::PayloadStager* stager() const noexcept { return stager_.get(); }

 private:
  std::size_t poll_staged();
  std::size_t poll_pcap();
  void hold_published(std::size_t stream, std::size_t most);
  std::size_t release_recorded(std::size_t stream, std::size_t at_least);
  void write_packet(const capture::StreamRing& ring, capture::SlotId id,
                    std::span<const std::byte> payload);
  void write_frame(std::size_t stream, capture::SlotId id, std::span<const std::byte> payload);
  void write_vdif_frame(std::size_t stream, capture::SlotId id, std::span<const std::byte> payload);
  void count_frame(std::size_t stream, const capture::SlotMeta& m);
  void on_staged(const staging::StageItem& item, std::span<const std::byte> payload, bool ok);
  void report_staging_errors();
  void write_fill(std::size_t stream,
                  std::span<const std::byte, capture::codif::kHeaderBytes> header,
                  uint32_t udp_payload_bytes, uint64_t from, uint64_t count);
  void take_gap_events(std::size_t stream);
  void release(std::size_t stream, std::span<const capture::SlotId> ids);
  void check(Status s);

  std::vector<capture::StreamPipeline*> streams_;
  capture::ArrivalQueue* arrivals_queue_;  // null without pcap
  std::vector<StreamWriters> per_stream_;
  std::optional<PcapWriter> pcap_;
  CaptureWriterOptions options_;
  WriteErrorReporter on_error_;
  std::vector<StreamWriteState> state_;
  std::vector<ConsumerLog*> consumer_logs_;            // per stream, null: no consumers
  std::vector<std::vector<capture::SlotId>> batches_;  // preallocated, one per stream
  std::vector<std::size_t> popped_;                    // per stream, this pass
  std::vector<capture::ArrivalRef> arrivals_;          // preallocated
  // poll_pcap: per stream, per slot, whether its pcap record is written and the slot not yet
  // released; the popped slots not yet released, oldest first (capacity: the ring's slots),
  // and how many of them this pass's drain certainly recorded.
  std::vector<std::vector<uint8_t>> recorded_;
  std::vector<std::vector<capture::SlotId>> held_;
  std::vector<std::size_t> held_n_;
  std::vector<std::size_t> sure_;
  std::unique_ptr<staging::PayloadStager> stager_;
  std::vector<staging::StageItem> stage_items_;  // preallocated
  uint64_t staging_errors_seen_ = 0;
  bool staging_failing_ = false;
  WriterShard whole_;
};

}  // namespace rocecap::writers
