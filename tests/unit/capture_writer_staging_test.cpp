// CaptureWriter with staged payloads against the direct path: the same frames (two streams,
// gaps, reorder, duplicates, many ring wraps) fed through a host ring written directly and
// through a "GPU" ring (host pages the CPU cannot read outside the copy engine) written through
// the stager must give byte-identical raw, codifhdr and pcap files, with rotation, small and
// large batches and staging buffers, and a split inside the CODIF header. Also: slots are not
// released while their copies are outstanding, the bytes-copied counter, and copy failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "capture/ingest.hpp"
#include "staging_test_util.hpp"
#include "test_frames.hpp"
#include "writer_test_util.hpp"
#include "writers/capture_writer.hpp"

namespace rocecap::writers {
namespace {

namespace tf = ::rocecap::test;
using capture::StreamPipeline;

struct Case {
  uint32_t split = 128;
  std::size_t batch = 256;
  std::size_t staging_buffer = std::size_t{4} << 20;
  uint64_t rotate_bytes = 0;
  bool stream_files = true;  // false: pcap output only
};

enum class Path { direct, staged, deferred };

capture::StreamSpec spec(uint32_t src, uint32_t split) {
  capture::StreamSpec s;
  s.key = {tf::kGroup, tf::kPort, src};
  s.ring.slots = 64;
  s.ring.header_slot_bytes = split;
  s.ring.payload_slot_bytes = 2048;
  s.ring.memory.huge_pages = capture::memory::Want::no;
  s.ring.memory.lock = capture::memory::Want::no;
  s.sequencer.reorder_window = 4;
  return s;
}

struct Capture {
  std::vector<test::ProtectedGpuMemory*> gpu;  // owned by the rings
  std::vector<std::unique_ptr<StreamPipeline>> streams;
  std::optional<capture::Ingest> ingest;
  std::vector<Status> errors;
  std::optional<CaptureWriter> writer;
  test::DeferredEngine* deferred = nullptr;  // owned by the writer's stager

  Capture(const std::filesystem::path& dir, const Case& setup, Path path) {
    for (uint32_t src : {tf::kSrcA, tf::kSrcB}) {
      const capture::StreamSpec sp = spec(src, setup.split);
      std::unique_ptr<capture::memory::PayloadMemory> mem;
      if (path != Path::direct) {
        auto m = std::make_unique<test::ProtectedGpuMemory>(
            capture::StreamRing::payload_bytes_needed(sp.ring));
        gpu.push_back(m.get());
        mem = std::move(m);
      }
      streams.push_back(std::make_unique<StreamPipeline>(sp, std::move(mem)));
    }
    ingest.emplace(std::vector<StreamPipeline*>{streams[0].get(), streams[1].get()}, true);
    RotationOptions rot;
    rot.buffer_bytes = 1 << 16;
    rot.max_bytes = setup.rotate_bytes;
    std::vector<StreamWriters> w(2);
    for (std::size_t s = 0; s < 2 && setup.stream_files; ++s) {
      w[s].raw.emplace(test::simple_paths(dir, "raw" + std::to_string(s)), rot);
      w[s].codifhdr.emplace(test::simple_paths(dir, "hdr" + std::to_string(s)), rot);
    }
    CaptureWriterOptions o;
    o.batch = setup.batch;
    o.staging.buffer_bytes = setup.staging_buffer;
    std::vector<const test::ProtectedGpuMemory*> protect(gpu.begin(), gpu.end());
    if (path == Path::staged) {
      o.copy_engine = [protect] { return std::make_unique<test::ProtectingEngine>(protect); };
    } else if (path == Path::deferred) {
      o.copy_engine = [this] {
        auto e = std::make_unique<test::DeferredEngine>();
        deferred = e.get();
        return e;
      };
    }
    writer.emplace(ingest->streams(), ingest->arrivals(), std::move(w),
                   PcapWriter(test::simple_paths(dir, "cap"), rot), o,
                   [this](const Status& s) { errors.push_back(s); });
  }

  void feed(uint32_t src, uint64_t index, int64_t ts) {
    for (auto* m : gpu)
      m->open();  // the "NIC" writes the payload slots
    const auto f = tf::frame(src, index);
    ingest->on_frame(f, f.size(), ts);
  }
  std::size_t poll() {
    if (deferred == nullptr) {  // the deferred engine's copies read the memory themselves
      for (auto* m : gpu)
        m->close();  // from here on only the copy engine may read a payload slot
    }
    return writer->poll();
  }
};

// The frame indices each stream sends: `frames` frames where every 37th is lost, pairs are
// swapped now and then (placed back by the reorder window) and some frames come twice.
std::vector<uint64_t> script(uint64_t frames) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < frames; ++i) {
    if (i % 37 == 5) continue;
    if (i % 23 == 10 && i + 1 < frames && (i + 1) % 37 != 5) {
      out.push_back(i + 1);
      out.push_back(i);
      ++i;
      continue;
    }
    out.push_back(i);
    if (i % 41 == 7) out.push_back(i);
  }
  return out;
}

// Independent of the writers: frames a stream's raw file holds (first to last sent), and how
// many of them are fill frames.
std::pair<uint64_t, uint64_t> expected_raw_frames(const std::vector<uint64_t>& sent) {
  std::vector<uint64_t> unique = sent;
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
  const uint64_t span = unique.back() - unique.front() + 1;
  return {span, span - unique.size()};
}

// Streams A and B interleaved, `between` called after every 8 frames.
template <class Between>
void feed_script(Capture& r, uint64_t frames, Between between) {
  int64_t ts = 1'000'000'000;
  std::size_t fed = 0;
  for (uint64_t i : script(frames)) {
    for (uint32_t src : {tf::kSrcA, tf::kSrcB}) {
      r.feed(src, 5000 + i, ts += 1000);
      if (++fed % 8 == 0) between();
    }
  }
}

void finish(Capture& r) {
  r.ingest->flush_all();
  while (r.poll() != 0) {
  }
  ASSERT_TRUE(r.writer->close().ok());
}

// Drains between feeds, so small batches mean many small passes and never a full ring.
void run_script(Capture& r, uint64_t frames) {
  feed_script(r, frames, [&] {
    while (r.poll() != 0) {
    }
  });
  finish(r);
  for (const auto& sp : r.streams)
    EXPECT_EQ(sp->ring().stats().ring_full_drops, 0u);
}

void expect_same_files(const std::vector<FileRecord>& direct, const std::vector<FileRecord>& staged,
                       const char* what) {
  ASSERT_EQ(direct.size(), staged.size()) << what;
  for (std::size_t i = 0; i < direct.size(); ++i) {
    const auto want = test::read_file(direct[i].path);
    EXPECT_FALSE(want.empty()) << what << " " << i;
    EXPECT_EQ(test::read_file(staged[i].path), want) << what << " file " << i;
  }
}

void expect_same_output(Capture& direct, Capture& staged) {
  for (std::size_t s = 0; s < 2; ++s) {
    expect_same_files(direct.writer->writers(s).raw->files(),
                      staged.writer->writers(s).raw->files(), "raw");
    expect_same_files(direct.writer->writers(s).codifhdr->files(),
                      staged.writer->writers(s).codifhdr->files(), "codifhdr");
    EXPECT_EQ(direct.writer->state(s).frames, staged.writer->state(s).frames);
  }
  PcapWriter* a = direct.writer->pcap();
  PcapWriter* b = staged.writer->pcap();
  ASSERT_TRUE(a != nullptr && b != nullptr);
  expect_same_files(a->files(), b->files(), "pcap");
}

// Payload-slot bytes of every frame handed to raw and of every pcap record.
uint64_t payload_slot_bytes_written(Capture& r, uint32_t split) {
  const uint64_t per_frame = tf::frame(tf::kSrcA, 0).size() - split;
  const PcapWriter* pcap = r.writer->pcap();
  uint64_t frames = pcap != nullptr ? pcap->stats().frames_written : 0;
  for (std::size_t s = 0; s < 2; ++s)
    frames += r.writer->state(s).frames;
  return frames * per_frame;
}

class StagedOutput : public ::testing::TestWithParam<Case> {};

TEST_P(StagedOutput, IsByteIdenticalToTheDirectPath) {
  const Case setup = GetParam();
  test::TempDir d1, d2;
  Capture direct(d1.path(), setup, Path::direct);
  Capture staged(d2.path(), setup, Path::staged);
  ASSERT_EQ(direct.writer->stager(), nullptr);
  ASSERT_NE(staged.writer->stager(), nullptr);
  run_script(direct, 300);
  run_script(staged, 300);
  EXPECT_TRUE(direct.errors.empty());
  EXPECT_TRUE(staged.errors.empty());
  expect_same_output(direct, staged);

  const auto [frames, fills] = expected_raw_frames(script(300));
  EXPECT_EQ(staged.writer->writers(0).raw->stats().frames_written, frames);
  EXPECT_EQ(staged.writer->writers(0).raw->stats().fill_frames, fills);
  EXPECT_GT(fills, 5u);
  if (setup.rotate_bytes != 0) {
    EXPECT_GT(staged.writer->writers(0).raw->files().size(), 1u);
  }
  const staging::StagingStats& st = staged.writer->stager()->stats();
  EXPECT_EQ(st.bytes_copied, payload_slot_bytes_written(staged, setup.split));
  EXPECT_EQ(st.frames_failed, 0u);
  EXPECT_GT(st.frames_staged, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Staging, StagedOutput,
    ::testing::Values(Case{},                                        // one batch per pass
                      Case{128, 3, 2048, 0},                         // tiny passes and buffers
                      Case{128, 256, 3 * 2048, 50'000},              // rotation, several batches
                      Case{64, 5, 5000, 0},                          // split inside the header
                      Case{64, 256, std::size_t{1} << 20, 20'000}),  // split + rotation
    [](const ::testing::TestParamInfo<Case>& i) {
      const Case& c = i.param;
      return "split" + std::to_string(c.split) + "_batch" + std::to_string(c.batch) + "_buffer" +
             std::to_string(c.staging_buffer) + "_rotate" + std::to_string(c.rotate_bytes);
    });

TEST(StagedOutput, ForcedStagingOfHostRingsMatchesTheDirectPath) {
  test::TempDir d1, d2;
  Capture direct(d1.path(), Case{}, Path::direct);
  CaptureWriterOptions forced;
  Capture staged_host(d2.path(), Case{}, Path::direct);
  // Rebuild the writer of the second run with staging forced on its host rings.
  {
    RotationOptions rot;
    rot.buffer_bytes = 1 << 16;
    std::vector<StreamWriters> w(2);
    for (std::size_t s = 0; s < 2; ++s) {
      w[s].raw.emplace(test::simple_paths(d2.path(), "fraw" + std::to_string(s)), rot);
      w[s].codifhdr.emplace(test::simple_paths(d2.path(), "fhdr" + std::to_string(s)), rot);
    }
    forced.force_staging = true;
    staged_host.writer.emplace(staged_host.ingest->streams(), staged_host.ingest->arrivals(),
                               std::move(w), PcapWriter(test::simple_paths(d2.path(), "fcap"), rot),
                               forced, nullptr);
  }
  ASSERT_NE(staged_host.writer->stager(), nullptr);
  EXPECT_EQ(staged_host.writer->stager()->engine().describe(), "host memcpy");
  run_script(direct, 120);
  run_script(staged_host, 120);
  expect_same_output(direct, staged_host);
  EXPECT_EQ(staged_host.writer->stager()->stats().bytes_copied,
            payload_slot_bytes_written(staged_host, 128));
}

TEST(StagedOutput, PcapOnlyOutputCopiesEachPayloadOnce) {
  test::TempDir d1, d2;
  Case pcap_only;
  pcap_only.stream_files = false;
  Capture direct(d1.path(), pcap_only, Path::direct);
  Capture staged(d2.path(), pcap_only, Path::staged);
  run_script(direct, 150);
  run_script(staged, 150);
  PcapWriter* a = direct.writer->pcap();
  PcapWriter* b = staged.writer->pcap();
  ASSERT_TRUE(a != nullptr && b != nullptr);
  expect_same_files(a->files(), b->files(), "pcap");
  EXPECT_EQ(staged.writer->state(0).frames, direct.writer->state(0).frames);
  const uint64_t records = b->stats().frames_written;
  const std::vector<uint64_t> sent = script(150);
  const std::set<uint64_t> placed(sent.begin(), sent.end());  // duplicates are not placed
  EXPECT_EQ(records, 2 * placed.size());
  EXPECT_EQ(staged.writer->stager()->stats().bytes_copied,
            records * (tf::frame(tf::kSrcA, 0).size() - 128));
}

TEST(StagedOutput, SlotsAreReleasedOnlyAfterTheirCopiesCompleted) {
  test::TempDir d1, d2;
  Case small{128, 4, 3 * 2048, 0};
  Capture direct(d1.path(), small, Path::direct);
  Capture staged(d2.path(), small, Path::deferred);
  ASSERT_NE(staged.deferred, nullptr);
  std::vector<uint64_t> released_at_start(2);
  std::size_t completions = 0, passes_that_released = 0;
  staged.deferred->on_complete = [&](unsigned, std::size_t) {
    ++completions;
    for (std::size_t s = 0; s < 2; ++s) {
      EXPECT_EQ(staged.streams[s]->ring().stats().released, released_at_start[s])
          << "a slot was released while a copy of this pass was outstanding";
    }
  };
  auto poll = [&] {
    for (std::size_t s = 0; s < 2; ++s)
      released_at_start[s] = staged.streams[s]->ring().stats().released;
    const std::size_t n = staged.poll();
    if (staged.streams[0]->ring().stats().released > released_at_start[0]) ++passes_that_released;
    return n;
  };
  run_script(direct, 200);
  feed_script(staged, 200, poll);
  staged.ingest->flush_all();
  while (poll() != 0) {
  }
  ASSERT_TRUE(staged.writer->close().ok());
  EXPECT_GT(completions, 10u);
  EXPECT_GT(passes_that_released, 10u);
  // The deferred engine copies only when a fence is waited for: identical files prove every
  // write came after its copy.
  expect_same_output(direct, staged);
}

TEST(StagedOutput, AFailedCopyIsReportedOnceAndItsFramesBecomeFillFrames) {
  test::TempDir d1, d2;
  Case setup{128, 256, std::size_t{1} << 20, 0};
  Capture direct(d1.path(), setup, Path::direct);
  Capture staged(d2.path(), setup, Path::deferred);
  run_script(direct, 100);
  std::size_t polls = 0;
  feed_script(staged, 100, [&] {
    // Two consecutive passes fail: one error report for the run of failures.
    staged.deferred->fail_copies = polls == 5 || polls == 6;
    ++polls;
    staged.poll();
  });
  staged.deferred->fail_copies = false;
  finish(staged);
  ASSERT_EQ(staged.errors.size(), 1u);
  EXPECT_NE(staged.errors[0].message().find("payload staging"), std::string::npos)
      << staged.errors[0].message();
  const auto& st = staged.writer->stager()->stats();
  EXPECT_GT(st.frames_failed, 0u);
  // The raw file keeps its length (time alignment): the lost frames are fill frames.
  const WriterStats& raw = staged.writer->writers(0).raw->stats();
  EXPECT_EQ(raw.frames_written, direct.writer->writers(0).raw->stats().frames_written);
  EXPECT_GT(raw.fill_frames, direct.writer->writers(0).raw->stats().fill_frames);
  EXPECT_EQ(test::read_file(staged.writer->writers(0).raw->files().at(0).path).size(),
            test::read_file(direct.writer->writers(0).raw->files().at(0).path).size());
}

}  // namespace
}  // namespace rocecap::writers
