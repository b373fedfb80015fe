#include "daemon/lib/reporting/metrics.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <utility>

#include "capture/net/packet.hpp"
#include "capture/reject_reason.hpp"
#include "daemon/lib/consumers/consumer_service.hpp"
#include "daemon/lib/dumps/dump_service.hpp"
#include "daemon/lib/reporting/report.hpp"

namespace rocecap::daemon {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

constexpr double kNsPerSecond = 1e9;

// Builds the exposition: one family per name, added in a fixed order. A deque, so the
// references handed out stay valid while more families are added.
class Exposition {
 public:
  MetricFamily& family(const char* name, const char* help, MetricType type) {
    out_.push_back(MetricFamily{name, help, type, {}});
    return out_.back();
  }
  std::vector<MetricFamily> take() {
    return {std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end())};
  }

 private:
  std::deque<MetricFamily> out_;
};

void add(MetricFamily& f, Labels labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  if (f.type == MetricType::Counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

double seconds(int64_t ns) {
  return static_cast<double>(ns) / kNsPerSecond;
}

Labels stream_labels(const Runtime& rt, const InterfaceRuntime& ir, std::size_t s) {
  const config::StreamRef& ref = ir.refs[s];
  const auto& g = rt.config->capture.interfaces[ref.interface].groups[ref.group];
  const std::string group =
      std::string(capture::net::format_ipv4(g.address).data()) + ":" + std::to_string(g.port);
  Labels l{{"interface", ir.name},
           {"group", group},
           {"antenna", rt.config->streams.antennas[ref.antenna].name}};
  // VDIF streams split by thread (streams.threads) are told apart by it.
  if (!rt.config->streams.threads.empty())
    l.push_back({"thread", std::to_string(rt.config->streams.threads[ref.thread])});
  return l;
}

// VDIF over VTP (doc/vdif.md): per UDP flow, kept on the flow's first stream.
void add_vtp(Exposition& e, const Runtime& rt) {
  if (!rt.config->streams.vtp) return;
  auto& skipped = e.family("rocecap_vtp_skipped_total",
                           "VTP packet sequence numbers never seen (packets lost on the way), "
                           "counted once no longer expected: 4096 numbers behind the highest, the "
                           "flow quiet, or the stop; per UDP flow",
                           MetricType::Counter);
  auto& ooo = e.family("rocecap_vtp_out_of_order_total",
                       "Packets whose VTP sequence number was at or below the highest seen "
                       "(late or repeated), per UDP flow",
                       MetricType::Counter);
  for (const auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s) {
      const capture::StreamPipeline& sp = *ir->streams[s];
      if (s > 0 && ir->streams[s - 1]->spec().key == sp.spec().key) continue;  // same flow
      Labels l = stream_labels(rt, *ir, s);
      if (!rt.config->streams.threads.empty()) l.pop_back();  // a flow carries every thread
      add(skipped, l, double(sp.vtp.skipped.get()));
      add(ooo, l, double(sp.vtp.out_of_order.get()));
    }
  }
}

void add_process(Exposition& e, const MetricsBuildInfo& info, int64_t start_ns, int state) {
  add(e.family("rocecap_build_info",
               "Always 1; labels name the version, capture backend and payload memory",
               MetricType::Gauge),
      {{"version", info.version},
       {"backend", info.backend},
       {"payload_memory", info.payload_memory},
       {"payload_memory_reason", info.payload_memory_reason}},
      1);
  add(e.family("rocecap_process_start_time_seconds", "When rocecapd started, Unix seconds",
               MetricType::Gauge),
      {}, seconds(start_ns));
  add(e.family("rocecap_run_attempt",
               "Starts of this run directory: 1, or N when this process continues a run after "
               "N - 1 earlier attempts (a restart after a crash; see the manifest's attempts)",
               MetricType::Gauge),
      {}, info.attempt);
  auto& f = e.family("rocecap_run_state", "1 for the state the run is in", MetricType::Gauge);
  for (int s = 0; s < kRunStateCount; ++s)
    add(f, {{"state", run_state_name(static_cast<RunState>(s))}}, s == state ? 1 : 0);
}

struct StreamFamilies {
  explicit StreamFamilies(Exposition& e)
      : packets(e.family("rocecap_stream_received_packets_total",
                         "CODIF frames (or datagrams) placed in the stream", MetricType::Counter)),
        bytes(e.family("rocecap_stream_received_bytes_total",
                       "Bytes of the placed frames (UDP payload)", MetricType::Counter)),
        lost(e.family("rocecap_stream_lost_frames_total", "Frames missing from the sequence (gaps)",
                      MetricType::Counter)),
        duplicate(e.family("rocecap_stream_duplicate_frames_total",
                           "Frames received more than once (dropped)", MetricType::Counter)),
        late(e.family("rocecap_stream_late_frames_total", "Frames out of order, put back in order",
                      MetricType::Counter)),
        late_dropped(e.family("rocecap_stream_late_dropped_frames_total",
                              "Frames too late for the reorder window", MetricType::Counter)),
        invalid(e.family("rocecap_stream_invalid_frames_total",
                         "Frames whose CODIF invalid bit was set", MetricType::Counter)),
        last_packet(e.family("rocecap_stream_last_packet_timestamp_seconds",
                             "Wall time a frame last arrived (100 ms resolution), Unix seconds",
                             MetricType::Gauge)),
        last_frame(e.family("rocecap_stream_last_frame_time_seconds",
                            "Instrument (CODIF) time of the newest frame, Unix seconds",
                            MetricType::Gauge)),
        ring_full(e.family("rocecap_ring_full_drops_total",
                           "Frames dropped because the stream's ring had no free slot",
                           MetricType::Counter)),
        ring_fill(e.family("rocecap_ring_fill_ratio",
                           "Share of the stream's ring slots held by capture or writer "
                           "(with retention: of the slots beyond the retained frames)",
                           MetricType::Gauge)),
        backlog(e.family("rocecap_writer_backlog_frames",
                         "Frames published to the writer and not yet taken by it",
                         MetricType::Gauge)) {}
  MetricFamily &packets, &bytes, &lost, &duplicate, &late, &late_dropped, &invalid, &last_packet,
      &last_frame, &ring_full, &ring_fill, &backlog;
};

void add_stream(StreamFamilies& f, const Runtime& rt, const InterfaceRuntime& ir, std::size_t s) {
  const Labels l = stream_labels(rt, ir, s);
  const capture::StreamPipeline& sp = *ir.streams[s];
  const capture::SequencerStats q = sp.sequencer().stats();
  const capture::RingStats r = sp.ring().stats();
  add(f.packets, l, double(q.received));
  add(f.bytes, l, double(q.bytes));
  add(f.lost, l, double(q.lost));
  add(f.duplicate, l, double(q.duplicate));
  add(f.late, l, double(q.late_placed));
  add(f.late_dropped, l, double(q.late_dropped));
  add(f.invalid, l, double(q.invalid));
  const uint64_t arrival =
      ir.published.activity ? ir.published.activity[s].last_arrival_ns.get() : 0;
  add(f.last_packet, l, seconds(static_cast<int64_t>(arrival)));
  add(f.last_frame, l, q.received ? seconds(q.last_time_ns) : 0);
  add(f.ring_full, l, double(r.ring_full_drops));
  // The two sides' counters are read a moment apart: clamp what cannot be.
  const uint64_t out = r.returned + r.released;
  uint64_t in_use = r.taken > out ? r.taken - out : 0;
  double slots = sp.ring().slots();
  if (sp.retention) {  // retained frames are not backlog: the fill is of the capture's share
    const capture::RetentionStats rs = sp.retention->stats();
    const uint64_t kept = std::min(rs.held, rs.keep);
    in_use = in_use > kept ? in_use - kept : 0;
    slots -= double(rs.keep);
  }
  add(f.ring_fill, l, std::min(1.0, double(in_use) / slots));
  add(f.backlog, l, r.published > r.consumed ? double(r.published - r.consumed) : 0);
}

// Busy-polling cost: CQ polls and the empty ones per interface (polls per packet is the
// capture thread's "busy wait per packet"). Only the verbs backend polls a CQ.
void add_verbs_polls(Exposition& e, const Runtime& rt) {
  const bool any = std::any_of(rt.interfaces.begin(), rt.interfaces.end(), [](const auto& ir) {
    return ir->source && ir->source->report().device_view;
  });
  if (!any) return;
  auto& polls = e.family("rocecap_cq_polls_total", "Completion queue polls of the capture thread",
                         MetricType::Counter);
  auto& empty = e.family("rocecap_cq_empty_polls_total",
                         "Completion queue polls that found nothing", MetricType::Counter);
  auto& errors = e.family("rocecap_completion_errors_total",
                          "Failed receive completions by reason: oversize (a frame longer than "
                          "capture.max_frame, IBV_WC_LOC_LEN_ERR) or other (flushes of a "
                          "recovering QP excluded); each starts a QP recovery",
                          MetricType::Counter);
  auto& clock = e.family("rocecap_timestamp_source",
                         "1 for where the interface's receive timestamps come from: "
                         "nic-raw-clock or software",
                         MetricType::Gauge);
  auto& recoveries = e.family("rocecap_qp_recoveries_total",
                              "Times the stream's receive QP was taken from the error state back "
                              "to receiving",
                              MetricType::Counter);
  for (const auto& ir : rt.interfaces) {
    if (!ir->source) continue;
    const capture::SourceReport v = ir->source->report();
    if (!v.device_view) continue;
    add(polls, {{"interface", ir->name}}, double(v.polls));
    add(empty, {{"interface", ir->name}}, double(v.empty_polls));
    add(errors, {{"interface", ir->name}, {"reason", "oversize"}}, double(v.oversize));
    add(errors, {{"interface", ir->name}, {"reason", "other"}}, double(v.errors));
    add(clock, {{"interface", ir->name}, {"source", v.time_source}}, 1);
    for (std::size_t s = 0; s < ir->streams.size(); ++s) {
      add(recoveries, stream_labels(rt, *ir, s),
          double(ir->source->stream_recoveries(static_cast<uint32_t>(s))));
    }
  }
}

// A source that lends its own memory (pcap_reader packet_ring with zero_copy): where payloads
// went, and held-block stalls.
void add_zero_copy(Exposition& e, const Runtime& rt) {
  std::vector<std::pair<std::string, capture::SourceReport>> lending;
  for (const auto& ir : rt.interfaces) {
    if (!ir->source) continue;
    if (capture::SourceReport r = ir->source->report(); r.zero_copy)
      lending.emplace_back(ir->name, std::move(r));
  }
  if (lending.empty()) return;
  auto& frames = e.family("rocecap_zero_copy_frames_total",
                          "Frames whose payload was written from the kernel's ring block (lent) "
                          "or copied into a ring slot because the lending bound was reached",
                          MetricType::Counter);
  auto& stalls = e.family("rocecap_held_block_stalls_total",
                          "Times every kernel ring block was held by unwritten frames (the "
                          "kernel drops frames until one is released)",
                          MetricType::Counter);
  for (const auto& [name, r] : lending) {
    add(frames, {{"interface", name}, {"path", "lent"}}, double(r.zero_copy_lent));
    add(frames, {{"interface", name}, {"path", "copied"}}, double(r.zero_copy_copied));
    add(stalls, {{"interface", name}}, double(r.held_block_stalls));
  }
}

void add_interfaces(Exposition& e, const Runtime& rt) {
  auto& rejected = e.family("rocecap_rejected_packets_total",
                            "Packets not placed in any stream, by reason", MetricType::Counter);
  auto& nic =
      e.family("rocecap_nic_drops_total",
               "Packets the kernel or NIC dropped before capture saw them", MetricType::Counter);
  auto& loops =
      e.family("rocecap_capture_loop_iterations_total",
               "Turns of the capture loop (a stalled loop stops advancing)", MetricType::Counter);
  auto& capturing = e.family("rocecap_capture_running", "1 while the interface's capture loop runs",
                             MetricType::Gauge);
  for (const auto& ir : rt.interfaces) {
    for (std::size_t r = 0; r < capture::kRejectReasonCount; ++r) {
      const std::string_view reason = capture::reject_name(r);
      if (reason.empty()) continue;  // the "ok" slots of the index space
      add(rejected, {{"interface", ir->name}, {"reason", std::string(reason)}},
          double(ir->ingest->rejected(r)));
    }
    add(nic, {{"interface", ir->name}}, double(ir->progress.nic_drops.get()));
    add(loops, {{"interface", ir->name}},
        double(ir->progress.iterations.load(std::memory_order_relaxed)));
    add(capturing, {{"interface", ir->name}},
        ir->progress.done.load(std::memory_order_relaxed) ? 0 : 1);
  }
  add_verbs_polls(e, rt);
  add_zero_copy(e, rt);
}

// Writer pool (output.writer_threads > 1): each thread's own counters, read at scrape time.
void add_writer_threads(Exposition& e, const Runtime& rt) {
  if (rt.writer_thread_count == 0) return;
  auto& slots =
      e.family("rocecap_writer_thread_slots_total",
               "Ring slots written and released by one writer-pool thread", MetricType::Counter);
  auto& busy = e.family("rocecap_writer_thread_busy_seconds_total",
                        "Time one writer-pool thread spent in passes that wrote something",
                        MetricType::Counter);
  auto& passes = e.family("rocecap_writer_thread_passes_total",
                          "Passes of one writer-pool thread over its streams", MetricType::Counter);
  for (std::size_t t = 0; t < rt.writer_thread_count; ++t) {
    const WriterThreadCounters& c = rt.writer_threads[t];
    const Labels l{{"thread", std::to_string(t)}};
    add(slots, l, double(c.slots.get()));
    add(busy, l, double(c.busy_ns.get()) * 1e-9);
    add(passes, l, double(c.passes.get()));
  }
}

void add_writers(Exposition& e, const Runtime& rt) {
  struct Item {
    const char* name;
    const char* help;
    common::RelaxedCounter FormatCounters::*counter;
  };
  static const Item items[] = {
      {"rocecap_written_bytes_total", "Bytes written to files", &FormatCounters::bytes_written},
      {"rocecap_written_frames_total", "Frames (or pcap records) written to files",
       &FormatCounters::frames_written},
      {"rocecap_fill_frames_total", "Fill frames written for missing frames",
       &FormatCounters::fill_frames},
      {"rocecap_write_dropped_frames_total", "Frames not written because of a file error",
       &FormatCounters::frames_dropped},
      {"rocecap_files_opened_total", "Output files opened", &FormatCounters::files_opened},
      {"rocecap_write_errors_total", "Failed open, write or close events",
       &FormatCounters::write_errors},
      {"rocecap_write_error_lost_frames_total",
       "Received frames (pcap: packets) not in any file because of a write error "
       "(loss reason write_error; fill frames not counted)",
       &FormatCounters::write_error_lost_frames},
      {"rocecap_storage_errors_total",
       "Write errors meaning the storage is lost: EIO, EROFS, a file or directory removed",
       &FormatCounters::storage_errors},
      {"rocecap_write_retries_total", "New files opened to retry after a write error",
       &FormatCounters::retries},
      {"rocecap_write_spills_total",
       "Write errors whose data went to a new file on another output target (not lost)",
       &FormatCounters::spills},
      {"rocecap_storage_lost_frames_total",
       "Received frames (pcap: packets) written to files that were then lost with their output "
       "target: its run directory removed or replaced, its mount changed (loss reason "
       "storage_lost; fill frames not counted)",
       &FormatCounters::storage_lost_frames},
  };
  for (const Item& item : items) {
    auto& f = e.family(item.name, item.help, MetricType::Counter);
    for (const auto& ir : rt.interfaces) {
      for (std::size_t k = 0; k < kOutputFormatCount; ++k) {
        if (!ir->published.format_used[k]) continue;
        const uint64_t v = format_total(ir->published, k, item.counter);
        add(f, {{"interface", ir->name}, {"format", std::string(format_name(k))}}, double(v));
      }
    }
  }
  auto& pass =
      e.family("rocecap_writer_last_pass_timestamp_seconds",
               "Wall time of the writer thread's latest pass, Unix seconds", MetricType::Gauge);
  for (const auto& ir : rt.interfaces) {
    add(pass, {{"interface", ir->name}},
        seconds(static_cast<int64_t>(ir->published.writer_last_pass_ns.get())));
  }
  add_writer_threads(e, rt);
}

// GPU->host staging, for interfaces whose writer stages payloads. The lag is a sum over frames
// (with the frame count beside it) so rate(lag)/rate(frames) is the mean over any window.
void add_staging(Exposition& e, const Runtime& rt) {
  const bool any = std::any_of(rt.interfaces.begin(), rt.interfaces.end(),
                               [](const auto& ir) { return ir->published.staging_used; });
  if (!any) return;
  auto& bytes = e.family("rocecap_staging_copied_bytes_total",
                         "Payload bytes copied from the payload memory (GPU) into pinned host "
                         "staging buffers for the writers",
                         MetricType::Counter);
  auto& frames = e.family("rocecap_staging_frames_total",
                          "Frames (and pcap records) whose payload copy to host memory completed",
                          MetricType::Counter);
  auto& failed = e.family("rocecap_staging_failed_frames_total",
                          "Frames whose payload copy to host memory failed (not written; raw "
                          "output gets fill frames)",
                          MetricType::Counter);
  auto& lag = e.family("rocecap_staging_lag_seconds_total",
                       "Staging lag summed over staged frames: from the writer taking a slot to "
                       "its payload copy completing; divide by rocecap_staging_frames_total",
                       MetricType::Counter);
  auto& lag_max = e.family("rocecap_staging_lag_max_seconds",
                           "Longest staging lag of a frame since start", MetricType::Gauge);
  for (const auto& ir : rt.interfaces) {
    if (!ir->published.staging_used) continue;
    const StagingCounters& c = ir->published.staging;
    const Labels l = {{"interface", ir->name}};
    add(bytes, l, double(c.bytes_copied.get()));
    add(frames, l, double(c.frames_staged.get()));
    add(failed, l, double(c.frames_failed.get()));
    add(lag, l, seconds(static_cast<int64_t>(c.lag_ns_total.get())));
    add(lag_max, l, seconds(static_cast<int64_t>(c.lag_ns_max.get())));
  }
}

// Per output target (output.directories; one target with output.directory): read at scrape
// time from OutputTargets (relaxed atomics, the placement lock and one statvfs per target).
void add_targets(Exposition& e, const Runtime& rt) {
  if (!rt.targets) return;
  auto& bytes = e.family("rocecap_target_written_bytes_total", "Bytes written to the output target",
                         MetricType::Counter);
  auto& writes =
      e.family("rocecap_target_writes_total",
               "write() calls (staging buffers) that succeeded on the target", MetricType::Counter);
  auto& write_s = e.family("rocecap_target_write_seconds_total",
                           "Time spent in those writes (mean latency: rate of this over rate "
                           "of rocecap_target_writes_total)",
                           MetricType::Counter);
  auto& max_s = e.family("rocecap_target_write_max_seconds",
                         "The slowest single write on the target so far", MetricType::Gauge);
  auto& free =
      e.family("rocecap_target_free_bytes",
               "Free bytes on the target's file system (statvfs f_bavail)", MetricType::Gauge);
  auto& files =
      e.family("rocecap_target_files_total", "Files opened on the target", MetricType::Counter);
  auto& state = e.family("rocecap_target_state",
                         "1 for the target's state: active (in rotation), full (ENOSPC; back "
                         "when space frees) or failed (EIO, vanished, stalled; out for the run)",
                         MetricType::Gauge);
  auto& out = e.family("rocecap_target_out_of_rotation_total",
                       "Times the target was taken out of rotation", MetricType::Counter);
  auto& backlog = e.family("rocecap_target_write_backlog_bytes",
                           "Bytes of the writes handed to the kernel and not completed on the "
                           "target (placement weighs down a target whose writes sit in flight)",
                           MetricType::Gauge);
  const auto snapshot = rt.targets->snapshot();
  for (std::size_t t = 0; t < snapshot.size(); ++t) {
    const writers::TargetSnapshot& s = snapshot[t];
    const Labels l{{"target", std::to_string(t)}, {"directory", s.directory.string()}};
    add(bytes, l, double(s.bytes_written));
    add(writes, l, double(s.writes));
    add(write_s, l, double(s.write_ns) / kNsPerSecond);
    add(max_s, l, double(s.max_write_ns) / kNsPerSecond);
    add(free, l, double(s.free_bytes));
    add(files, l, double(s.files));
    add(out, l, double(s.out_of_rotation));
    add(backlog, l, double(s.backlog_bytes));
    for (const auto st :
         {writers::TargetState::active, writers::TargetState::full, writers::TargetState::failed}) {
      Labels sl = l;
      sl.push_back({"state", std::string(writers::to_string(st))});
      add(state, std::move(sl), s.state == st ? 1 : 0);
    }
  }
}

// Triggered dumps (doc/dumps.md); zeros when retention is off (one set of panels and alerts
// for every run).
void add_dumps(Exposition& e, const Runtime& rt) {
  static const DumpCounters kNone;
  const DumpCounters* c = rt.dump_counters != nullptr ? rt.dump_counters : &kNone;
  add(e.family("rocecap_triggers_received_total", "Trigger requests received (socket and HTTP)",
               MetricType::Counter),
      {}, double(c->received.load()));
  add(e.family("rocecap_triggers_served_total", "Triggered dumps written", MetricType::Counter), {},
      double(c->served.load()));
  add(e.family("rocecap_triggers_failed_total",
               "Triggered dumps that could not be written whole (write errors, no target): the "
               "manifest's triggers and the log say why",
               MetricType::Counter),
      {}, double(c->failed.load()));
  auto& refused =
      e.family("rocecap_triggers_refused_total",
               "Trigger requests refused, by reason (the answer says why)", MetricType::Counter);
  for (std::size_t r = 0; r < DumpCounters::kReasonCount; ++r)
    add(refused, {{"reason", DumpCounters::kReasons[r]}}, double(c->refused[r].load()));
  add(e.family("rocecap_triggers_queued", "Accepted dumps waiting for the dump thread",
               MetricType::Gauge),
      {}, double(c->queued.load()));
  add(e.family("rocecap_dump_bytes_total", "Bytes written to dump files", MetricType::Counter), {},
      double(c->bytes.load()));
  add(e.family("rocecap_dump_duration_seconds_total", "Time spent writing dumps",
               MetricType::Counter),
      {}, double(c->duration_ns.load()) / 1e9);
  add(e.family("rocecap_dump_frames_not_retained_total",
               "Frames of requested windows not in any dump: overwritten, beyond max_future, or "
               "not received in time",
               MetricType::Counter),
      {}, double(c->frames_not_retained.load()));
  add(e.family("rocecap_dump_fill_frames_total",
               "Fill frames written into dumps (frames the streams lost)", MetricType::Counter),
      {}, double(c->fill_frames.load()));
  auto& pinned = e.family("rocecap_ring_dump_pinned_drops_total",
                          "Frames dropped because a triggered dump's pins held the ring's slots",
                          MetricType::Counter);
  for (const auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s)
      add(pinned, stream_labels(rt, *ir, s),
          double(ir->streams[s]->ring().stats().dump_pinned_drops));
  }
}

// Consumers (doc/consumers.md): the socket's counters, each attached consumer's progress per
// stream as it last reported it, and what hold-mode pins cost the capture.
void add_consumers(Exposition& e, const Runtime& rt, const ConsumerService* svc) {
  if (svc == nullptr) return;
  const auto c = svc->counters();
  add(e.family("rocecap_consumers", "Consumers attached to the consumer socket now",
               MetricType::Gauge),
      {}, double(c->open.get()));
  add(e.family("rocecap_consumer_connections_total", "Connections to the consumer socket",
               MetricType::Counter),
      {}, double(c->connections.get()));
  add(e.family("rocecap_consumer_refused_total",
               "Consumers refused: busy, a malformed or late hello, a stream not offered",
               MetricType::Counter),
      {}, double(c->refused.get()));
  add(e.family("rocecap_consumer_dropped_total",
               "Hold-mode consumers detached for passing consumers.hold_frames or hold_time",
               MetricType::Counter),
      {}, double(c->detached.get()));
  auto& read = e.family("rocecap_consumer_frames_read_total",
                        "Frames a consumer read, as it last reported", MetricType::Counter);
  auto& missed = e.family("rocecap_consumer_frames_missed_total",
                          "Frames a consumer missed (overwritten before it read them, or torn), as "
                          "it last reported",
                          MetricType::Counter);
  auto& lag = e.family("rocecap_consumer_lag_frames",
                       "Frames published that a consumer has not read yet", MetricType::Gauge);
  const auto& streams = svc->streams();
  for (const ConsumerSnapshot& s : svc->snapshot()) {
    for (const ConsumerStreamProgress& p : s.streams) {
      std::string name;
      for (const ConsumerStream& cs : streams)
        if (cs.index == p.stream) name = cs.name;
      const Labels l{{"consumer", s.name}, {"mode", s.mode}, {"stream", name}};
      add(read, l, double(p.read));
      add(missed, l, double(p.missed));
      add(lag, l, double(p.lag));
    }
  }
  auto& pinned = e.family("rocecap_ring_consumer_pinned_drops_total",
                          "Frames dropped because hold-mode consumers' pins held the ring's slots",
                          MetricType::Counter);
  for (const auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s)
      add(pinned, stream_labels(rt, *ir, s),
          double(ir->streams[s]->ring().stats().consumer_pinned_drops));
  }
}

}  // namespace

const char* run_state_name(RunState s) noexcept {
  switch (s) {
    case RunState::starting:
      return "starting";
    case RunState::running:
      return "running";
    case RunState::stopping:
      return "stopping";
    case RunState::stopped:
      return "stopped";
  }
  return "unknown";
}

MetricsCollector::MetricsCollector(const Runtime& rt, MetricsBuildInfo info,
                                   int64_t process_start_ns)
    : rt_(rt), info_(std::move(info)), process_start_ns_(process_start_ns) {}

std::vector<prometheus::MetricFamily> MetricsCollector::Collect() const {
  Exposition e;
  add_process(e, info_, process_start_ns_, state_.load());
  StreamFamilies streams(e);
  for (const auto& ir : rt_.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s)
      add_stream(streams, rt_, *ir, s);
  }
  add_interfaces(e, rt_);
  add_vtp(e, rt_);
  add_writers(e, rt_);
  add_targets(e, rt_);
  add(e.family("rocecap_storage_lost",
               "1 once the run's storage is lost (run directory removed or replaced, a file "
               "deleted, EIO: the run stops; files lost with one of several output targets: "
               "the run goes on on the others): rocecapd exits 5",
               MetricType::Gauge),
      {}, rt_.storage.lost() || rt_.storage.files_lost() ? 1 : 0);
  add_staging(e, rt_);
  add_dumps(e, rt_);
  add_consumers(e, rt_, consumers_.load());
  return e.take();
}

MetricsServer::MetricsServer(uint32_t address, uint16_t port,
                             std::shared_ptr<MetricsCollector> collector)
    : collector_(std::move(collector)) {
  const std::string where =
      std::string(capture::net::format_ipv4(address).data()) + ":" + std::to_string(port);
  try {
    http_ = std::make_unique<HttpListener>(where, collector_);
  } catch (const std::exception& e) {  // "cannot listen on <where>: <why in words>"
    throw std::runtime_error(std::string("metrics: ") + e.what());
  }
}

MetricsServer::~MetricsServer() = default;

uint16_t MetricsServer::port() const {
  const std::vector<int> ports = http_->ports();
  return ports.empty() ? 0 : static_cast<uint16_t>(ports.front());
}

std::unique_ptr<MetricsServer> start_metrics(Runtime& rt, const std::string& version,
                                             int64_t process_start_ns) {
  const config::MetricsSection& m = rt.config->metrics;
  if (!m.enabled) return nullptr;
  const Manifest view = snapshot(rt, RunIdentity{"", "", version}, "running");
  MetricsBuildInfo info{version, view.backend, view.payload_memory, view.payload_memory_reason,
                        rt.attempt};
  auto collector = std::make_shared<MetricsCollector>(rt, std::move(info), process_start_ns);
  return std::make_unique<MetricsServer>(m.address, m.port, std::move(collector));
}

}  // namespace rocecap::daemon
