#include "daemon/lib/reporting/published.hpp"

#include "daemon/lib/run/run_assembly.hpp"

namespace rocecap::daemon {
namespace {

void add_stats(std::array<uint64_t, 11>& sum, const writers::WriterStats& w) noexcept {
  sum[0] += w.bytes_written;
  sum[1] += w.frames_written;
  sum[2] += w.fill_frames;
  sum[3] += w.frames_dropped;
  sum[4] += w.files_opened;
  sum[5] += w.write_errors;
  sum[6] += w.write_loss.frames;
  sum[7] += w.storage_errors;
  sum[8] += w.retries;
  sum[9] += w.spills;
  sum[10] += w.storage_loss.frames;
}

void store(FormatCounters& c, const std::array<uint64_t, 11>& sum) noexcept {
  c.bytes_written.set(sum[0]);
  c.frames_written.set(sum[1]);
  c.fill_frames.set(sum[2]);
  c.frames_dropped.set(sum[3]);
  c.files_opened.set(sum[4]);
  c.write_errors.set(sum[5]);
  c.write_error_lost_frames.set(sum[6]);
  c.storage_errors.set(sum[7]);
  c.retries.set(sum[8]);
  c.spills.set(sum[9]);
  c.storage_lost_frames.set(sum[10]);
}

}  // namespace

std::string_view format_name(std::size_t format) noexcept {
  static constexpr std::string_view names[kOutputFormatCount] = {"raw", "codifhdr", "pcap",
                                                                 "vdifhdr"};
  return format < kOutputFormatCount ? names[format] : "unknown";
}

void prepare_published(InterfaceRuntime& ir) {
  ir.published.activity = std::make_unique<StreamActivity[]>(ir.streams.size());
  auto& used = ir.published.format_used;
  used = {};
  for (std::size_t s = 0; s < ir.streams.size(); ++s) {
    const writers::StreamWriters& w = ir.writer->writers(s);
    used[std::size_t(PublishedFormat::raw)] |= w.raw.has_value();
    used[std::size_t(PublishedFormat::codifhdr)] |= w.codifhdr.has_value();
    used[std::size_t(PublishedFormat::vdifhdr)] |= w.vdifhdr.has_value();
  }
  used[std::size_t(PublishedFormat::pcap)] = ir.writer->pcap() != nullptr;
  ir.published.staging_used = ir.writer->stager() != nullptr;
}

void publish_capture(InterfaceRuntime& ir, int64_t now_ns) noexcept {
  if (!ir.published.activity) return;
  for (std::size_t s = 0; s < ir.streams.size(); ++s) {
    StreamActivity& a = ir.published.activity[s];
    const uint64_t received = ir.streams[s]->sequencer().stats().received;
    if (received == a.seen_received) continue;
    a.seen_received = received;
    a.last_arrival_ns.set(static_cast<uint64_t>(now_ns));
  }
}

void publish_writer(InterfaceRuntime& ir, int64_t now_ns) noexcept {
  std::array<uint64_t, 11> raw{}, hdr{}, pcap{}, vhdr{};
  for (std::size_t s = 0; s < ir.streams.size(); ++s) {
    writers::StreamWriters& w = ir.writer->writers(s);
    if (w.raw) add_stats(raw, w.raw->stats());
    if (w.codifhdr) add_stats(hdr, w.codifhdr->stats());
    if (w.vdifhdr) add_stats(vhdr, w.vdifhdr->stats());
  }
  if (auto* p = ir.writer->pcap()) add_stats(pcap, p->stats());
  PublishedStats& out = ir.published;
  store(out.formats[std::size_t(PublishedFormat::raw)], raw);
  store(out.formats[std::size_t(PublishedFormat::codifhdr)], hdr);
  store(out.formats[std::size_t(PublishedFormat::pcap)], pcap);
  store(out.formats[std::size_t(PublishedFormat::vdifhdr)], vhdr);
  if (const auto* stager = ir.writer->stager()) {
    const writers::staging::StagingStats& st = stager->stats();
    out.staging.bytes_copied.set(st.bytes_copied);
    out.staging.frames_staged.set(st.frames_staged);
    out.staging.frames_failed.set(st.frames_failed);
    out.staging.lag_ns_total.set(st.lag_ns_total);
    out.staging.lag_ns_max.set(st.lag_ns_max);
  }
  out.writer_passes.add();
  out.writer_last_pass_ns.set(static_cast<uint64_t>(now_ns));
}

void prepare_shards(InterfaceRuntime& ir, std::size_t count) {
  ir.published.shards = std::make_unique<std::array<FormatCounters, kOutputFormatCount>[]>(count);
  ir.published.shard_count = count;
}

void publish_shard(InterfaceRuntime& ir, const writers::WriterShard& shard, std::size_t slot,
                   int64_t now_ns) noexcept {
  std::array<uint64_t, 11> raw{}, hdr{}, pcap{}, vhdr{};
  for (std::size_t s : shard.streams) {
    writers::StreamWriters& w = ir.writer->writers(s);
    if (w.raw) add_stats(raw, w.raw->stats());
    if (w.codifhdr) add_stats(hdr, w.codifhdr->stats());
    if (w.vdifhdr) add_stats(vhdr, w.vdifhdr->stats());
  }
  if (auto* p = ir.writer->pcap(); p != nullptr && shard.pcap) add_stats(pcap, p->stats());
  auto& out = ir.published.shards[slot];
  store(out[std::size_t(PublishedFormat::raw)], raw);
  store(out[std::size_t(PublishedFormat::codifhdr)], hdr);
  store(out[std::size_t(PublishedFormat::pcap)], pcap);
  store(out[std::size_t(PublishedFormat::vdifhdr)], vhdr);
  if (slot != 0) return;
  if (const auto* stager = ir.writer->stager()) {  // a staging interface is one shard
    const writers::staging::StagingStats& st = stager->stats();
    ir.published.staging.bytes_copied.set(st.bytes_copied);
    ir.published.staging.frames_staged.set(st.frames_staged);
    ir.published.staging.frames_failed.set(st.frames_failed);
    ir.published.staging.lag_ns_total.set(st.lag_ns_total);
    ir.published.staging.lag_ns_max.set(st.lag_ns_max);
  }
  ir.published.writer_passes.add();
  ir.published.writer_last_pass_ns.set(static_cast<uint64_t>(now_ns));
}

uint64_t format_total(const PublishedStats& p, std::size_t format,
                      common::RelaxedCounter FormatCounters::*counter) noexcept {
  uint64_t v = (p.formats[format].*counter).get();
  for (std::size_t i = 0; i < p.shard_count; ++i)
    v += (p.shards[i][format].*counter).get();
  return v;
}

}  // namespace rocecap::daemon
