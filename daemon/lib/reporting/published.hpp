// Counters that exist only so another thread can read them: the capture and writer threads
// copy what they own (plain ints, or facts only they know) here at a coarse pace, never per
// packet. Readers (the metrics exposer, status) use relaxed loads; no locks anywhere.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "common/relaxed_counter.hpp"
#include "writers/capture_writer.hpp"

namespace rocecap::daemon {

struct InterfaceRuntime;

// Written by the capture thread once per housekeeping period.
struct StreamActivity {
  common::RelaxedCounter last_arrival_ns;  // wall clock, Unix ns; 0: nothing yet
  uint64_t seen_received = 0;              // capture thread only: received at the last look
};

// One output format of one interface, summed over its streams; written by the writer thread.
struct FormatCounters {
  common::RelaxedCounter bytes_written;
  common::RelaxedCounter frames_written;
  common::RelaxedCounter fill_frames;
  common::RelaxedCounter frames_dropped;
  common::RelaxedCounter files_opened;
  common::RelaxedCounter write_errors;
  common::RelaxedCounter write_error_lost_frames;  // received frames / records (write_error)
  common::RelaxedCounter storage_errors;
  common::RelaxedCounter retries;
  common::RelaxedCounter spills;               // moved to another output target instead of lost
  common::RelaxedCounter storage_lost_frames;  // received frames / records (storage_lost)
};

// GPU->host payload staging of one interface (writers/staging/payload_stager.hpp); written by
// the writer thread, present only when its CaptureWriter stages.
struct StagingCounters {
  common::RelaxedCounter bytes_copied;
  common::RelaxedCounter frames_staged;
  common::RelaxedCounter frames_failed;
  common::RelaxedCounter lag_ns_total;
  common::RelaxedCounter lag_ns_max;
};

// One writer-pool thread; written by that thread, summed by nobody: exposed per thread.
struct WriterThreadCounters {
  common::RelaxedCounter passes;   // polls of its shards
  common::RelaxedCounter slots;    // ring slots written and released
  common::RelaxedCounter busy_ns;  // time in passes that wrote something
};

enum class PublishedFormat : std::size_t { raw, codifhdr, pcap, vdifhdr };
inline constexpr std::size_t kOutputFormatCount = 4;
std::string_view format_name(std::size_t format) noexcept;

struct PublishedStats {
  std::unique_ptr<StreamActivity[]> activity;  // [stream]; sized before threads start
  std::array<FormatCounters, kOutputFormatCount> formats;
  std::array<bool, kOutputFormatCount> format_used{};  // set before threads start
  StagingCounters staging;
  bool staging_used = false;  // set before threads start
  // Writer pool: one block per shard of this interface, each written by its thread (none with
  // one writer thread: `formats` holds everything). format_total() adds them at scrape time.
  std::unique_ptr<std::array<FormatCounters, kOutputFormatCount>[]> shards;
  std::size_t shard_count = 0;
  common::RelaxedCounter writer_passes;
  common::RelaxedCounter writer_last_pass_ns;  // wall clock, Unix ns
};

// Before any thread starts: sizes ir.published and records which formats ir writes.
void prepare_published(InterfaceRuntime& ir);

// Capture thread: stamps `now_ns` on every stream that received frames since the last call.
void publish_capture(InterfaceRuntime& ir, int64_t now_ns) noexcept;

// Writer thread: copies the writers' plain stats of `ir` into ir.published.
void publish_writer(InterfaceRuntime& ir, int64_t now_ns) noexcept;

// Writer pool, before the threads start: `count` shard blocks for `ir`.
void prepare_shards(InterfaceRuntime& ir, std::size_t count);
// Writer-pool thread: the stats of one shard of `ir` into its block `slot` (slot 0 also counts
// the interface's passes and stamps its last pass).
void publish_shard(InterfaceRuntime& ir, const writers::WriterShard& shard, std::size_t slot,
                   int64_t now_ns) noexcept;
// Any thread: one counter of one format of `ir`, over the single writer or every shard.
uint64_t format_total(const PublishedStats& p, std::size_t format,
                      common::RelaxedCounter FormatCounters::*counter) noexcept;

}  // namespace rocecap::daemon
