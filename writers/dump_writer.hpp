// The files of one stream's triggered dump (doc/dumps.md): the frames of a window taken from
// the stream's retention (capture/retention.hpp), written time-aligned exactly as the raw writer
// writes them, with fill frames for the frames the stream lost, so that the dump file of window
// [first, last] holds last - first + 1 frames in index order.
//
// Runs on the dump thread. It reads only slots its pin holds (the caller pinned `from_pos`
// before any of them could be released) and moves the pin past each batch it has written, so
// the writer thread may recycle them. Payloads are read through a PayloadStager (host memcpy
// or CUDA copies out of GPU memory), never straight from a GPU slab. A window that reaches
// past the newest frame is served as its frames arrive, until `wait_until_ns`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "capture/codif/header.hpp"
#include "capture/retention.hpp"
#include "capture/sequencer.hpp"
#include "capture/stream_pipeline.hpp"
#include "writers/rotating_file.hpp"
#include "writers/staging/payload_stager.hpp"

namespace rocecap::writers {

// Sleeps the calling thread so that the bytes it spends average at most `bytes_per_second`
// (after an initial burst of 1 MiB). 0: no bound.
class RateLimiter {
 public:
  explicit RateLimiter(uint64_t bytes_per_second);
  void spend(uint64_t bytes);

 private:
  uint64_t rate_;
  std::chrono::steady_clock::time_point start_;
  uint64_t spent_ = 0;
};

// A dump file's writers open `path` and, after a write error, <stem>.<seq><ext> beside it
// (never the broken file again); one file per format, no rotation.
PathMaker dump_path_maker(const std::filesystem::path& path);
RotationOptions dump_rotation();

struct DumpFiles {  // an empty path: that format is not written
  std::filesystem::path raw, codifhdr, pcap, vdifhdr;
};

// How far one stream's dump has got, for readers on other threads (a dump's status): the dump
// thread stores the counts after each batch of frames it has written and the final ones when
// the files are closed; no lock, and nothing per frame beyond the batch.
struct StreamDumpProgress {
  enum Phase : int { waiting = 0, writing = 1, done = 2 };
  std::atomic<int> phase{waiting};
  std::atomic<uint64_t> frames{0};       // received frames written so far
  std::atomic<uint64_t> fill_frames{0};  // fill frames written so far
  // Bytes handed to the files so far (every format); once done, the files' sizes.
  std::atomic<uint64_t> bytes{0};
  void reset() noexcept {
    phase.store(waiting, std::memory_order_relaxed);
    frames.store(0, std::memory_order_relaxed);
    fill_frames.store(0, std::memory_order_relaxed);
    bytes.store(0, std::memory_order_relaxed);
  }
};

struct StreamDumpRequest {
  capture::Retention* retention = nullptr;
  std::size_t pin = 0;       // the caller's pin on retention, held at or before from_pos
  uint64_t from_pos = 0;     // first retention position to look at
  uint64_t first_index = 0;  // frames to write: [first_index, last_index]
  uint64_t last_index = 0;
  int64_t wait_until_ns = 0;        // wall clock (Unix ns) to wait for frames not yet arrived
  std::function<int64_t()> now_ns;  // that wall clock; empty: CLOCK_REALTIME
  capture::codif::SyncSet syncs = capture::codif::SyncSet::defaults();
  // VDIF streams (doc/vdif.md): frames per second and VTP; the VTP number is not written to
  // raw or vdifhdr files (as the continuous writer), pcap keeps whole datagrams.
  capture::StreamFormat format = capture::StreamFormat::codif;
  capture::VdifSpec vdif;
  DumpFiles files;
  // Keep the pin at from_pos instead of moving it past each batch: the caller may have to write
  // the same frames again on another output target if this one fails.
  bool hold_pin = false;
  StreamDumpProgress* progress = nullptr;  // updated as the dump goes; null: not reported
};

struct StreamDumpResult {
  uint64_t frames = 0;                  // received frames written
  uint64_t fill_frames = 0;             // fill frames written (frames the stream lost)
  uint64_t bytes = 0;                   // bytes in the dump files
  std::vector<capture::GapEvent> gaps;  // runs of fill frames
  // Frames of [first_index, last_index] not written, and why ("not received by ...").
  std::optional<std::pair<uint64_t, uint64_t>> not_written;
  std::string not_written_reason;
  std::vector<std::string> errors;  // write errors (path: message)
  int error_code = 0;               // errno of the first of them; 0: none
  // Per format ("raw", "codifhdr", "vdifhdr", "pcap") that lost records to write errors: what its
  // files lack. `frames` and `fill_frames` above count what the first format's files hold.
  std::vector<std::pair<std::string, WriteLoss>> write_loss;
  std::vector<FileRecord> files;
};

// The pieces of a stream dump's result that every writer of dump files shares (this file's
// dumper and `rocecap extract`, daemon/lib/extract/extract_sink.cpp).
// A writer's error into `out`: the first errno, and the message naming its file once.
void note_dump_error(StreamDumpResult& out, const Status& s);
// Closes writer `w` and adds its files, their bytes and its write loss (as `format`) to `out`.
template <class W>
void close_dump_writer(W& w, const char* format, StreamDumpResult& out) {
  note_dump_error(out, w.close());
  for (const FileRecord& f : w.files()) {
    out.bytes += f.bytes;
    out.files.push_back(f);
  }
  const WriteLoss& l = w.stats().write_loss;
  if (l.frames + l.fills != 0) out.write_loss.emplace_back(format, l);
}
// Once every writer is closed: `frames` and `fill_frames` count what the files of the first
// format written (`first`) hold, not what was handed to them.
void settle_dump_counts(StreamDumpResult& out, const char* first);

class StreamDumper {
 public:
  StreamDumper(staging::PayloadStager& stager, RateLimiter& rate) : stager_(stager), rate_(rate) {}
  // `stop`: give up waiting for future frames (the run is stopping).
  StreamDumpResult run(const StreamDumpRequest& request, const std::atomic<bool>& stop);

 private:
  staging::PayloadStager& stager_;
  RateLimiter& rate_;
};

}  // namespace rocecap::writers
