#include "daemon/lib/reporting/report.hpp"

#include <unistd.h>

#include <chrono>
#include <limits>
#include <mutex>

#include "capture/net/packet.hpp"
#include "capture/reject_reason.hpp"

namespace rocecap::daemon {
namespace {

std::string ip(uint32_t a) {
  return capture::net::format_ipv4(a).data();
}

std::string relative_path(const std::filesystem::path& p, const std::filesystem::path& root) {
  return std::filesystem::relative(p, root).string();
}

// Relative to its target's directory; with several targets the entry names the target.
ManifestFileEntry file_entry(const config::RunConfig& cfg, const writers::FileRecord& f,
                             const char* format) {
  const bool several = cfg.output.directories.size() > 1;
  const std::string& root = several && f.target < cfg.output.directories.size()
                                ? cfg.output.directories[f.target]
                                : cfg.output.directory;
  ManifestFileEntry e;
  e.path = relative_path(f.path, root);
  e.format = format;
  e.bytes = f.bytes;
  if (several) {
    e.target = f.target;
    e.first_index = f.first_index;
    e.frames = f.records;
  }
  return e;
}

// A file lost with its output target (rundir keeps `frames`, `first_index` and the reason).
ManifestFileEntry lost_entry(const config::RunConfig& cfg, const writers::FileRecord& f,
                             const char* format) {
  ManifestFileEntry e = file_entry(cfg, f, format);
  e.target = f.target;
  e.first_index = f.first_index;
  e.frames = f.records;
  e.lost = f.lost;
  return e;
}

std::vector<ManifestTarget> targets_entry(const Runtime& rt) {
  std::vector<ManifestTarget> out;
  if (!rt.targets || rt.targets->size() < 2) return out;
  for (const writers::TargetSnapshot& t : rt.targets->snapshot()) {
    out.push_back({t.directory.string(), std::string(writers::to_string(t.state)), t.bytes_written,
                   t.files, t.free_bytes, t.out_of_rotation, t.reason});
  }
  return out;
}

std::optional<ManifestFrameTime> frame_time(uint64_t index, int64_t ns, bool any) {
  if (!any) return std::nullopt;
  return ManifestFrameTime{index, ns};
}

ManifestStream stream_entry(const Runtime& rt, InterfaceRuntime& ir, std::size_t s) {
  const config::RunConfig& cfg = *rt.config;
  const config::StreamRef& ref = ir.refs[s];
  const auto& g = cfg.capture.interfaces[ref.interface].groups[ref.group];
  const auto& ant = cfg.streams.antennas[ref.antenna];
  const capture::SequencerStats q = ir.streams[s]->sequencer().stats();
  const writers::StreamWriteState& w = ir.writer->state(s);
  ManifestStream m;
  m.interface = ir.name;
  m.group = ip(g.address);
  m.port = g.port;
  m.antenna = ant.name;
  m.source = ip(ant.source);
  if (!cfg.streams.threads.empty()) m.thread = cfg.streams.threads[ref.thread];
  if (const auto f = config::stream_frequencies(cfg, ref))
    m.frequency_mhz = {f->low_mhz, f->high_mhz};
  const capture::StreamPipeline& sp = *ir.streams[s];
  if (cfg.streams.vtp && (s == 0 || ir.streams[s - 1]->spec().key != sp.spec().key))
    m.vtp = {sp.vtp.skipped.get(), sp.vtp.out_of_order.get()};
  m.packets = q.received;
  m.bytes = q.bytes;
  m.lost = q.lost;
  m.duplicate = q.duplicate;
  m.late = q.late_placed;
  m.late_dropped = q.late_dropped;
  m.invalid = q.invalid;
  m.resync = q.resync;
  m.first_frame = frame_time(q.first_index, q.first_time_ns, q.received > 0);
  m.last_frame = frame_time(q.last_index, q.last_time_ns, q.received > 0);
  for (const auto& gap : w.gaps)
    m.gaps.emplace_back(gap.first_index, gap.count);
  m.gaps_not_listed = w.gaps_not_listed + q.gap_events_dropped;
  auto& writers = ir.writer->writers(s);
  auto add_files = [&](auto& writer, const char* format) {
    for (const auto& f : writer.files())
      m.files.push_back(file_entry(cfg, f, format));
    m.write_errors += writer.stats().write_errors;
    m.spills += writer.stats().spills;
    const writers::WriteLoss& l = writer.stats().write_loss;
    m.write_error_lost.push_back({format, l.frames, l.fills, l.gaps, l.gaps_not_listed});
    const writers::WriteLoss& sl = writer.stats().storage_loss;
    m.storage_lost.push_back({format, sl.frames, sl.fills, sl.gaps, sl.gaps_not_listed});
    for (const auto& f : writer.lost_files())
      m.lost_files.push_back(lost_entry(cfg, f, format));
  };
  if (writers.raw) {
    add_files(*writers.raw, "raw");
    m.fill_frames = writers.raw->stats().fill_frames;
  }
  if (writers.codifhdr) add_files(*writers.codifhdr, "codifhdr");
  if (writers.vdifhdr) add_files(*writers.vdifhdr, "vdifhdr");
  if (ir.source) m.qp_recoveries = ir.source->stream_recoveries(static_cast<uint32_t>(s));
  return m;
}

// The manifest's device-level section (interfaces[].verbs) of a source that has one.
std::optional<ManifestVerbs> device_entry(const InterfaceRuntime& ir) {
  if (!ir.source) return std::nullopt;
  const capture::SourceReport r = ir.source->report();
  if (!r.device_view) return std::nullopt;
  ManifestVerbs m;
  m.device = r.device;
  m.time_source = r.time_source;
  m.wc_errors = r.errors;
  m.qp_recoveries = r.recoveries;
  m.first_wc_error = r.first_error;
  m.oversize = r.oversize;
  return m;
}

ManifestInterface interface_entry(const Runtime& rt, InterfaceRuntime& ir) {
  ManifestInterface m;
  m.name = ir.name;
  m.nic_drops = ir.progress.nic_drops.get();
  if (ir.source) {
    if (const capture::SourceReport r = ir.source->report(); r.zero_copy)
      m.zero_copy = ManifestZeroCopy{r.zero_copy_lent, r.zero_copy_copied, r.held_block_stalls};
  }
  for (const auto& sp : ir.streams)
    m.ring_full_drops += sp->ring().stats().ring_full_drops;
  for (const auto& sp : ir.streams) {
    m.dump_pinned_drops += sp->ring().stats().dump_pinned_drops;
    m.consumer_pinned_drops += sp->ring().stats().consumer_pinned_drops;
  }
  for (std::size_t r = 0; r < capture::kRejectReasonCount; ++r) {
    const uint64_t n = ir.ingest->rejected(r);
    if (n != 0) m.rejected[std::string(capture::reject_name(r))] = n;
  }
  if (auto* pcap = ir.writer->pcap()) {
    m.write_errors = pcap->stats().write_errors;
    m.write_error_lost = pcap->stats().write_loss.frames;
    m.spills = pcap->stats().spills;
    for (const auto& f : pcap->files())
      m.files.push_back(file_entry(*rt.config, f, "pcap"));
    m.storage_lost = pcap->stats().storage_loss.frames;
    for (const auto& f : pcap->lost_files())
      m.lost_files.push_back(lost_entry(*rt.config, f, "pcap"));
  }
  m.verbs = device_entry(ir);
  return m;
}

// A source with a device-level view (verbs) posts every free slot to the NIC at once.
bool slots_posted(const InterfaceRuntime& ir) {
  return ir.source && ir.source->report().device_view;
}

}  // namespace

Manifest snapshot(Runtime& rt, const RunIdentity& id, const std::string& state) {
  const config::RunConfig& cfg = *rt.config;
  Manifest m;
  m.run = cfg.run.name;
  m.state = state;
  m.started = id.started;
  if (state == "stopped" || state == "failed") m.stopped = iso8601_utc(unix_now_ns());
  m.host = id.host;
  m.version = id.version;
  m.backend = std::string(config::to_string(cfg.capture.backend));
  m.payload_memory = std::string(capture::memory::to_string(rt.payload.kind));
  m.payload_memory_reason = rt.payload.reason;
  m.config_file = cfg.source_path;
  m.config_text = cfg.source_text;
  for (const auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s)
      m.streams.push_back(stream_entry(rt, *ir, s));
    m.interfaces.push_back(interface_entry(rt, *ir));
    if (ir->progress.failed.load(std::memory_order_acquire)) {
      m.failure = ir->name + ": " + ir->progress.error;
    }
  }
  m.targets = targets_entry(rt);
  {
    // Writers list under it; so does the manifest thread when a snapshot is not written.
    const std::lock_guard lock(rt.write_errors.mutex);
    m.errors = rt.write_errors.errors;
    m.errors_not_listed = rt.write_errors.not_listed;
  }
  if (rt.trigger_log) m.triggers = rt.trigger_log();
  if (rt.consumer_log) m.consumers = rt.consumer_log();
  return m;
}

namespace {

// With verbs every free slot is taken at once (posted to the NIC), so the fill that matters is
// what the writer still holds: published and not yet released.
double ring_fill(const capture::StreamRing& ring, bool verbs) {
  const auto r = ring.stats();
  const uint64_t held = verbs ? r.published - r.released : r.taken - r.returned - r.released;
  return double(held) / ring.slots();
}

std::size_t stream_count(const Runtime& rt) {
  std::size_t n = 0;
  for (const auto& ir : rt.interfaces)
    n += ir->streams.size();
  return n;
}

}  // namespace

void log_status(const Runtime& rt, spdlog::logger& log, double seconds, StatusTotals& last) {
  const double dt = seconds > 0 ? seconds : 1;
  const auto stream_level =
      stream_count(rt) <= kStatusStreamsAtInfo ? spdlog::level::info : spdlog::level::debug;
  last.stream_packets.resize(stream_count(rt));
  StatusTotals now;
  uint64_t lost = 0, rejected = 0, nic = 0, ring_drops = 0;
  double worst_fill = 0;
  std::size_t k = 0;
  for (const auto& ir : rt.interfaces) {
    const bool posted = slots_posted(*ir);
    for (std::size_t s = 0; s < ir->streams.size(); ++s, ++k) {
      const auto& sp = ir->streams[s];
      const auto q = sp->sequencer().stats();
      const double fill = ring_fill(sp->ring(), posted);
      now.packets += q.received;
      now.bytes += q.bytes;
      lost += q.lost;
      const capture::RingStats r = sp->ring().stats();
      ring_drops += r.ring_full_drops + r.dump_pinned_drops + r.consumer_pinned_drops;
      worst_fill = std::max(worst_fill, fill);
      const auto& ref = ir->refs[s];
      const auto& g = rt.config->capture.interfaces[ref.interface].groups[ref.group];
      log.log(stream_level, "status: {} {}:{} {}: {:.0f} pkt/s, {} lost, ring {:.0f}%", ir->name,
              ip(g.address), g.port, rt.config->streams.antennas[ref.antenna].name,
              double(q.received - last.stream_packets[k]) / dt, q.lost, fill * 100);
      now.stream_packets.push_back(q.received);
    }
    for (std::size_t r = 0; r < capture::kRejectReasonCount; ++r)
      rejected += ir->ingest->rejected(r);
    nic += ir->progress.nic_drops.get();
  }
  log.info(
      "status: {:.0f} pkt/s, {:.1f} MB/s; {} packets, {} lost, {} rejected, {} ring-full "
      "drops (pinned included), {} NIC drops; fullest ring {:.0f}%{}",
      double(now.packets - last.packets) / dt, double(now.bytes - last.bytes) / dt / 1e6,
      now.packets, lost, rejected, ring_drops, nic, worst_fill * 100,
      rt.consumer_status ? "; " + rt.consumer_status() : std::string());
  last = std::move(now);
}

void log_source_events(const Runtime& rt, spdlog::logger& log) {
  for (const auto& ir : rt.interfaces) {
    if (!ir->source) continue;
    if (const std::string e = ir->source->take_event(); !e.empty()) log.warn("{}", e);
  }
}

void log_final_summary(const Runtime& rt, spdlog::logger& log) {
  for (const auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s) {
      const auto& ref = ir->refs[s];
      const auto& g = rt.config->capture.interfaces[ref.interface].groups[ref.group];
      const auto q = ir->streams[s]->sequencer().stats();
      log.info(
          "stream {} {}:{} {}: {} packets, {} bytes, {} lost, {} duplicate, {} late, {} "
          "late dropped, {} invalid, {} resync",
          ir->name, ip(g.address), g.port, rt.config->streams.antennas[ref.antenna].name,
          q.received, q.bytes, q.lost, q.duplicate, q.late_placed, q.late_dropped, q.invalid,
          q.resync);
    }
    for (std::size_t r = 0; r < capture::kRejectReasonCount; ++r) {
      if (const uint64_t n = ir->ingest->rejected(r); n != 0) {
        log.info("interface {}: {} frames rejected: {}", ir->name, n, capture::reject_name(r));
      }
    }
    if (ir->source) {
      if (const capture::SourceReport r = ir->source->report(); r.device_view) {
        log.info(
            "interface {}: RDMA device {}: {} CQ polls ({} empty), {} completions, {} oversize, "
            "{} completion errors, {} QP recoveries, {} receive WRs posted, {} NIC drops "
            "(out_of_buffer); timestamps: {}",
            ir->name, r.device, r.polls, r.empty_polls, r.frames, r.oversize, r.errors,
            r.recoveries, r.posted, ir->progress.nic_drops.get(), r.time_source);
      }
    }
  }
}

}  // namespace rocecap::daemon
