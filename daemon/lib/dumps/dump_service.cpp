#include "daemon/lib/dumps/dump_service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "capture/vdif/timeline.hpp"
#include "config/token_file.hpp"
#include "config/units.hpp"
#include "daemon/lib/dumps/dump_json.hpp"
#include "daemon/lib/dumps/stream_clock.hpp"
#include "daemon/lib/reporting/atomic_file.hpp"
#include "writers/output_path.hpp"
#include "writers/staging/engine_factory.hpp"

namespace rocecap::daemon {
namespace {

namespace codif = capture::codif;
using nlohmann::json;
__extension__ using i128 = __int128;

int64_t wall_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// `out.size()` bytes of the UDP payload from `offset` on, of the frame in retention position
// `pos` (pinned by the caller); false when they lie in GPU memory (capture.header_split too
// small) or beyond the frame.
bool read_udp_bytes(const capture::Retention& ret, uint64_t pos, std::size_t offset,
                    std::span<std::byte> out) {
  const capture::StreamRing& ring = ret.ring();
  const capture::SlotId id = ret.at(pos);
  const capture::SlotMeta& m = ring.meta(id);
  const std::size_t off = m.udp_payload_offset + offset;
  if (off + out.size() > m.wire_bytes) return false;
  if (off + out.size() <= m.header_bytes) {
    std::memcpy(out.data(), ring.header(id).data() + off, out.size());
    return true;
  }
  if (ring.payload_kind() != capture::memory::MemoryKind::host || off > m.header_bytes)
    return false;
  const std::size_t head = m.header_bytes - off;
  std::memcpy(out.data(), ring.header(id).data() + off, head);
  std::memcpy(out.data() + head, ring.payload(id).data(), out.size() - head);
  return true;
}

// A VDIF frame's clock in the CODIF model (capture/vdif/timeline.hpp: a period of one second,
// frames per second as frames per period, the same half-year epochs).
bool read_vdif_clock(const capture::Retention& ret, const capture::VdifSpec& spec, uint64_t pos,
                     StreamClock& c) {
  const std::size_t skip = spec.vtp ? capture::vdif::kVtpBytes : 0;
  std::array<std::byte, capture::vdif::kLegacyHeaderBytes> word{};
  capture::vdif::Header h;
  capture::vdif::Timing t;
  if (!read_udp_bytes(ret, pos, skip, word) || !capture::vdif::decode(word, h)) {
    std::array<std::byte, capture::vdif::kHeaderBytes> full{};
    if (!read_udp_bytes(ret, pos, skip, full) || !capture::vdif::decode(full, h)) return false;
  }
  const capture::SlotMeta& m = ret.ring().meta(ret.at(pos));
  if (capture::vdif::validate(h, m.wire_bytes - m.udp_payload_offset - skip, spec.rate, t) !=
      capture::vdif::Invalid::ok)
    return false;
  capture::vdif::sequencer_view(h, t, c.h, c.t);
  return true;
}

// The clock (CODIF header, or VDIF in the CODIF model) of the frame in retention position
// `pos` (pinned by the caller).
bool read_clock(const capture::Retention& ret, const DumpStream& s, uint64_t pos, StreamClock& c) {
  if (s.format == capture::StreamFormat::vdif) return read_vdif_clock(ret, s.vdif, pos, c);
  std::array<std::byte, codif::kHeaderBytes> bytes{};
  if (!read_udp_bytes(ret, pos, 0, bytes)) return false;
  const capture::SlotMeta& m = ret.ring().meta(ret.at(pos));
  return codif::decode(bytes, s.syncs, c.h) &&
         codif::validate(c.h, m.wire_bytes - m.udp_payload_offset, c.t) == codif::Invalid::ok;
}

std::size_t reason_index(const std::string& reason) {
  for (std::size_t i = 0; i < DumpCounters::kReasonCount; ++i) {
    if (reason == DumpCounters::kReasons[i]) return i;
  }
  return 0;
}

// The timing of the newest frame `s` retains (pinned while it is read); false when the stream
// has no frame yet.
bool newest_clock(const DumpStream& s, StreamClock& clock) {
  capture::Retention& ret = *s.retention;
  uint64_t pinned = 0;
  const auto pin = ret.pin(ret.range().head, pinned);
  if (!pin) return false;
  const uint64_t tail = ret.range().tail;
  const bool ok = pinned < tail && read_clock(ret, s, tail - 1, clock);
  ret.unpin(*pin);
  return ok;
}

// A CODIF-time window as Unix ns, with the timing of stream `s`; false when the stream has no
// frame yet. `why`: a time that stream's frames cannot have (refused bad_window).
bool codif_window(const DumpStream& s, const TriggerRequest& r, int64_t& start, int64_t& end,
                  std::string& why) {
  StreamClock clock;
  if (!newest_clock(s, clock)) return false;
  why = clock.unix_ns(r.start, "start", start);
  if (why.empty()) why = clock.unix_ns(r.end, "end", end);
  return why.empty();
}

// The number after the highest of the dump directories already in `dumps` ("0007" or
// "0007-label"): a run continued after a crash (an earlier attempt's dumps are there) numbers
// on from them instead of clashing with their directories.
uint64_t first_free_dump_id(const std::filesystem::path& dumps) {
  uint64_t highest = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dumps, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    uint64_t id = 0;
    std::size_t digits = 0;
    while (digits < name.size() && digits < 19 && name[digits] >= '0' && name[digits] <= '9')
      id = id * 10 + static_cast<uint64_t>(name[digits++] - '0');
    if (digits >= 4 && (digits == name.size() || name[digits] == '-'))
      highest = std::max(highest, id);
  }
  return highest + 1;
}

// The run file's output directories, for a service not given the run's OutputTargets (tests).
std::shared_ptr<writers::OutputTargets> own_targets(const config::RunConfig& c) {
  std::vector<std::filesystem::path> dirs(c.output.directories.begin(), c.output.directories.end());
  if (dirs.empty()) dirs.emplace_back(c.output.directory);
  return std::make_shared<writers::OutputTargets>(std::move(dirs));
}

// The errors that say a target is full or failing (as RotatingFile reads them): another target
// may take the dump.
bool target_fault(int err) noexcept {
  return err == ENOSPC || err == EDQUOT || err == EFBIG || writers::is_storage_loss(err);
}

// Frames of the window a stream's dump does not hold: not arrived, or lost to write errors.
uint64_t frames_not_written(const writers::StreamDumpResult& res) {
  uint64_t n = res.not_written ? res.not_written->second - res.not_written->first + 1 : 0;
  if (!res.write_loss.empty()) {
    const writers::WriteLoss& l = res.write_loss.front().second;
    n += l.frames + l.fills;
  }
  return n;
}

}  // namespace

struct DumpService::StreamPlan {
  std::size_t stream = 0;
  bool known = false;  // the stream had frames: the window has frame numbers
  uint64_t window_first = 0, window_last = 0;
  int64_t window_start_ns = 0, window_end_ns = 0;  // this stream's window (swept with a dm)
  std::optional<config::FrequencyRange> band;      // with a dm: what the stream spans
  long double start_delay_s = 0, end_delay_s = 0;  // with a dm: delay(high), delay(low)
  bool serve = false;
  uint64_t first = 0, last = 0;  // planned: retained now, or arriving within the bound
  bool future = false;           // part of it has not arrived yet
  json not_retained = json::array();
  std::string note;
  bool pinned = false;
  std::size_t pin = 0;
  uint64_t from_pos = 0;
  int64_t wait_until_ns = 0;
  writers::DumpFiles files;  // file names in the dump's directory
  writers::StreamDumpResult result;
  // Counts so far, stored by the dump thread per batch, read by status() from any thread.
  std::shared_ptr<writers::StreamDumpProgress> progress =
      std::make_shared<writers::StreamDumpProgress>();
};

struct DumpService::Windows {
  std::vector<int64_t> starts, ends;  // per chosen stream
  double ref_mhz = 0;                 // with a dm
};

struct DumpService::Job {
  uint64_t id = 0;
  std::string label, body, received;
  std::string name;  // of its directory: 0007 or 0007-label
  int64_t start_ns = 0, end_ns = 0;
  std::optional<double> dm;  // a dispersed event's: its dm and reference frequency (MHz)
  double ref_mhz = 0;
  bool ref_default = false;  // ref_mhz is the top of the band (the request gave none)
  std::size_t target = 0;    // output target of its directory
  bool placed = false;       // `expected` bytes reserved on `target` (OutputTargets::place)
  uint64_t expected = 0;
  std::filesystem::path dir;
  std::vector<StreamPlan> streams;
  std::string state = "queued";
  double duration_s = 0;
  std::string written;
  std::string error;                // why it failed; empty: written whole
  json retries = json::array();     // targets that failed under it: {directory, error}
  std::filesystem::path dump_json;  // where dump.json went; empty: nowhere
};

DumpService::DumpService(const config::RunConfig& config, std::filesystem::path run_dir,
                         std::vector<DumpStream> streams, DumpServiceOptions options)
    : config_(config),
      run_dir_(std::move(run_dir)),
      streams_(std::move(streams)),
      options_(std::move(options)),
      targets_(options_.targets ? options_.targets : own_targets(config)) {
  if (!options_.now_ns) options_.now_ns = wall_now_ns;
  for (std::size_t t = 0; t < targets_->size(); ++t)
    next_id_ = std::max(next_id_, first_free_dump_id(dump_root(t)));
  if (!config.retention.http_token_file.empty()) {
    config::TokenFile t = config::read_token_file(config.retention.http_token_file);
    if (!t.error.empty()) throw std::runtime_error("retention.http_token_file " + t.error);
    token_ = std::move(t.token);
  }
  std::size_t stride = 0;
  capture::memory::MemoryKind kind = capture::memory::MemoryKind::host;
  for (const DumpStream& s : streams_) {
    stride = std::max(stride, s.retention->ring().payload_stride());
    if (s.retention->ring().payload_kind() == capture::memory::MemoryKind::gpu)
      kind = s.retention->ring().payload_kind();
  }
  writers::staging::StagingOptions so;
  so.cuda_device = options_.cuda_device;
  so.buffer_bytes = std::size_t{1} << 20;
  own_stager_ = std::make_unique<writers::staging::PayloadStager>(
      writers::staging::make_copy_engine(kind, options_.cuda_device),
      std::max<std::size_t>(stride, 64), so);
  thread_ = std::thread([this] { run(); });
}

DumpService::~DumpService() {
  stop();
  {
    std::lock_guard lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DumpService::stop() {
  stop_.store(true);
  cv_.notify_all();
}

void DumpService::wait_idle() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

json DumpService::refuse(const std::string& reason, const std::string& message,
                         const std::string& body) {
  counters_.refused[reason_index(reason)].fetch_add(1);
  std::lock_guard lock(mu_);
  refused_log_.push_back({{"received", format_utc_ns(options_.now_ns())},
                          {"refused", reason},
                          {"error", message},
                          {"request", body.size() <= 4096 ? body : body.substr(0, 4096)}});
  return {{"ok", false}, {"reason", reason}, {"error", message}};
}

// A request from the network (`http`) without the configured token: refused unauthorized.
std::optional<json> DumpService::check_token(const std::optional<std::string>& token, bool http,
                                             const std::string& bearer, const std::string& body) {
  if (!http || token_.empty() || token.value_or("") == token_ || bearer == token_)
    return std::nullopt;
  return refuse("unauthorized",
                token || !bearer.empty() ? "wrong token"
                                         : "this endpoint needs the configured token "
                                           "(\"token\" or Authorization: Bearer)",
                body);
}

// Which streams the request names; an error message when it names one the run lacks.
std::string DumpService::select(const TriggerRequest& r, std::vector<std::size_t>& chosen) const {
  const auto& antennas = config_.streams.antennas;
  for (const std::string& a : r.antennas) {
    const bool known = std::any_of(antennas.begin(), antennas.end(),
                                   [&](const config::Antenna& x) { return x.name == a; });
    if (!known) {
      std::string names;
      for (const auto& x : antennas)
        names += (names.empty() ? "" : ", ") + x.name;
      return fmt::format("unknown antenna '{}' (this run has: {})", a, names);
    }
  }
  auto group_text = [&](const config::StreamRef& ref) {
    const auto& g = config_.capture.interfaces[ref.interface].groups[ref.group];
    return config::format_ipv4(g.address) + ":" + std::to_string(g.port);
  };
  for (const std::string& g : r.groups) {
    const bool known = std::any_of(streams_.begin(), streams_.end(), [&](const DumpStream& s) {
      return group_text(s.ref) == g ||
             config::format_ipv4(
                 config_.capture.interfaces[s.ref.interface].groups[s.ref.group].address) == g;
    });
    if (!known) return fmt::format("unknown group '{}' (write address:port as configured)", g);
  }
  for (std::size_t i = 0; i < streams_.size(); ++i) {
    const config::StreamRef& ref = streams_[i].ref;
    const std::string& antenna = antennas[ref.antenna].name;
    const bool a = r.antennas.empty() ||
                   std::find(r.antennas.begin(), r.antennas.end(), antenna) != r.antennas.end();
    const std::string gt = group_text(ref);
    const std::string ga = gt.substr(0, gt.find(':'));
    const bool g =
        r.groups.empty() || std::any_of(r.groups.begin(), r.groups.end(),
                                        [&](const std::string& x) { return x == gt || x == ga; });
    if (a && g) chosen.push_back(i);
  }
  return {};
}

std::string DumpService::stream_name(std::size_t i) const {
  return dump_stream_name(config_, streams_[i].ref);
}

// Frame 0 of a stream is its CODIF reference epoch: a window that starts before it has no
// frame numbers there (it would have been answered as frame 0, "overwritten").
std::string DumpService::before_an_epoch(const std::vector<std::size_t>& chosen,
                                         const std::vector<int64_t>& starts) const {
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    const std::size_t i = chosen[k];
    const int64_t start_ns = starts[k];
    StreamClock clock;
    if (!newest_clock(streams_[i], clock) || i128{start_ns} >= clock.epoch_ns()) continue;
    return fmt::format(
        "'start' ({}, this stream's) is before the CODIF reference epoch {} ({}) of stream {}: "
        "no frame number can name it",
        format_utc_ns(start_ns), clock.h.epoch,
        format_utc_ns(static_cast<int64_t>(clock.epoch_ns())), stream_name(i));
  }
  return {};
}

// The job's dispersed window on stream `p` ([start, end) at the reference frequency in, the
// stream's window out); false, with a note, when the stream cannot have one.
bool DumpService::sweep(const Job& job, StreamPlan& p, int64_t& start, int64_t& end) const {
  p.band = config::stream_frequencies(config_, streams_[p.stream].ref);
  const std::optional<SweptWindow> w =
      p.band ? sweep_window(start, end, *job.dm, job.ref_mhz, *p.band) : std::nullopt;
  if (!w) {
    p.note = p.band ? "the dispersed window is beyond what Unix nanoseconds hold"
                    : "streams.frequencies does not give this stream's frequencies";
    return false;
  }
  p.start_delay_s = w->start_delay_s;
  p.end_delay_s = w->end_delay_s;
  start = w->start_ns;
  end = w->end_ns;
  return true;
}

// Each chosen stream's window: the request's [start, end), or with a dm swept by the delays at
// the stream's frequencies. A refusal when a stream has no frequencies or a window no Unix
// nanoseconds can hold.
std::optional<json> DumpService::stream_windows(const TriggerRequest& r,
                                                const std::vector<std::size_t>& chosen,
                                                int64_t start_ns, int64_t end_ns, Windows& out,
                                                const std::string& body) {
  out.starts.assign(chosen.size(), start_ns);
  out.ends.assign(chosen.size(), end_ns);
  if (!r.dm) return std::nullopt;
  const std::optional<double> top = config::top_of_band_mhz(config_);
  out.ref_mhz = r.ref_freq_mhz.value_or(top.value_or(0));
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    const auto band = config::stream_frequencies(config_, streams_[chosen[k]].ref);
    if (!band) {
      return refuse("no_frequencies",
                    fmt::format("a dm needs each stream's frequencies, and streams.frequencies "
                                "does not give those of stream {}",
                                stream_name(chosen[k])),
                    body);
    }
    const auto w = sweep_window(start_ns, end_ns, *r.dm, out.ref_mhz, *band);
    if (!w) {
      return refuse("bad_window",
                    fmt::format("stream {}: delayed by dm {} from {} MHz the window is beyond "
                                "what Unix nanoseconds hold",
                                stream_name(chosen[k]), *r.dm, out.ref_mhz),
                    body);
    }
    out.starts[k] = w->start_ns;
    out.ends[k] = w->end_ns;
  }
  return std::nullopt;
}

void DumpService::plan_stream(Job& job, std::size_t i, const TriggerRequest& req) {
  StreamPlan& p = job.streams.emplace_back();
  p.stream = i;
  const DumpStream& ds = streams_[i];
  capture::Retention& ret = *ds.retention;
  const capture::Retention::Range range = ret.range();
  uint64_t pinned = 0;
  const auto pin = ret.pin(range.head, pinned);
  if (!pin) {
    p.note = "too many dumps hold this stream; not served";
    return;
  }
  p.pinned = true;
  p.pin = *pin;
  const uint64_t tail = ret.range().tail;
  StreamClock clock;
  if (pinned >= tail || !read_clock(ret, ds, tail - 1, clock)) {
    p.note = pinned >= tail ? "no frame received yet on this stream: nothing retained"
                            : "the newest frame's header could not be read";
    ret.unpin(*pin);
    p.pinned = false;
    return;
  }
  p.known = true;
  int64_t start = req.start.unix_ns, end = req.end.unix_ns;
  // Checked by handle() with the first chosen stream's timing; this stream's is the same
  // (one run file, one frame rate) or the window is cut to what it can name.
  // With a dm the window is this stream's swept one (handle() checked it for every stream).
  const bool named = clock.unix_ns(req.start, "start", start).empty() &&
                     clock.unix_ns(req.end, "end", end).empty();
  const bool swept = named && (!job.dm || sweep(job, p, start, end));
  if (!swept || i128{start} < clock.epoch_ns()) {
    if (p.note.empty()) p.note = "the window cannot be named in this stream's frame numbers";
    ret.unpin(*pin);
    p.pinned = false;
    p.known = false;
    return;
  }
  p.window_start_ns = start;
  p.window_end_ns = end;
  p.window_first = clock.index_at(start);
  p.window_last = clock.index_at(end - 1);
  const capture::StreamRing& ring = ret.ring();
  const uint64_t oldest = ring.meta(ret.at(pinned)).frame_index;
  const uint64_t newest = ring.meta(ret.at(tail - 1)).frame_index;
  const uint64_t bound = clock.index_at(options_.now_ns() + config_.retention.max_future.count());
  uint64_t first = p.window_first, last = p.window_last;
  if (first < oldest) {
    const uint64_t upto = std::min(last, oldest - 1);
    p.not_retained.push_back(range_json(first, upto, "overwritten: older than the retention"));
    first = upto + 1;
  }
  if (last > newest && last > bound) {
    const uint64_t from = std::max(first, std::max(newest, bound) + 1);
    if (from <= last) {
      p.not_retained.push_back(
          range_json(from, last,
                     fmt::format("in the future beyond retention.max_future ({})",
                                 config::format_duration(config_.retention.max_future))));
      last = from - 1;
    }
  }
  if (first > last || last < oldest) {
    ret.unpin(*pin);
    p.pinned = false;
    return;
  }
  p.serve = true;
  p.first = first;
  p.last = last;
  p.future = last > newest;
  if (p.future) p.wait_until_ns = clock.time_of(last + 1) + options_.future_grace.count();
  uint64_t pos = pinned;
  while (pos < tail && ring.meta(ret.at(pos)).frame_index < first)
    ++pos;
  p.from_pos = pos;
  ret.move_pin(*pin, pos);
  p.files = dump_file_names(config_, ds.ref, config_.retention.formats,
                            ds.format == capture::StreamFormat::vdif);
}

// The windows of a request whose times are known, against the epochs, the retention and
// max_future: a refusal, or nothing.
std::optional<json> DumpService::check_windows(const TriggerRequest& req,
                                               const std::vector<std::size_t>& chosen,
                                               const Windows& w, int64_t flat_ns,
                                               const std::string& body) {
  if (std::string why = before_an_epoch(chosen, w.starts); !why.empty())
    return refuse("bad_window", why, body);
  std::size_t longest = 0;
  for (std::size_t k = 1; k < chosen.size(); ++k) {
    if (w.ends[k] - w.starts[k] > w.ends[longest] - w.starts[longest]) longest = k;
  }
  const int64_t length = w.ends[longest] - w.starts[longest];
  if (length > config_.retention.retain.count()) {
    const std::string sweep =
        req.dm ? fmt::format(
                     ", dispersed by dm {} from {} MHz on stream {}: {:.6f} s window + "
                     "{:.6f} s sweep",
                     *req.dm, w.ref_mhz, stream_name(chosen[longest]), flat_ns * 1e-9,
                     (length - flat_ns) * 1e-9)
               : "";
    const std::string shown = req.dm ? fmt::format("{:.6f} s", length * 1e-9)
                                     : config::format_duration(std::chrono::nanoseconds(length));
    return refuse("too_long",
                  fmt::format("the window ({}{}) is longer than the retention (retention.retain "
                              "{}): it can never be served whole",
                              shown, sweep, config::format_duration(config_.retention.retain)),
                  body);
  }
  // Nothing of a window that starts beyond max_future could be retained in time: refused, so
  // that a far future (or a mistyped year) is never answered as a dump.
  const int64_t start_ns = *std::min_element(w.starts.begin(), w.starts.end());
  const int64_t ahead = options_.now_ns() + config_.retention.max_future.count();
  if (start_ns > ahead) {
    return refuse(
        "too_far_ahead",
        fmt::format("the window starts at {}, more than retention.max_future ({}) "
                    "from now ({}): ask again when it is closer",
                    format_utc_ns(start_ns), config::format_duration(config_.retention.max_future),
                    format_utc_ns(options_.now_ns())),
        body);
  }
  return std::nullopt;
}

json DumpService::handle(std::string_view body_view, bool http, const std::string& bearer) {
  // What is stored (dump.json, the trigger log): never the token.
  const std::string body = redact_request(body_view);
  TriggerParse parsed = parse_trigger_request(body_view);
  if (const auto* st = std::get_if<StatusRequest>(&parsed)) {  // a question, not a trigger
    if (auto refused = check_token(st->token, http, bearer, body)) {
      counters_.received.fetch_add(1);
      return *refused;
    }
    return status(st->id);
  }
  counters_.received.fetch_add(1);
  if (auto* e = std::get_if<TriggerError>(&parsed)) return refuse(e->reason, e->message, body);
  TriggerRequest& req = std::get<TriggerRequest>(parsed);
  if (auto refused = check_token(req.token, http, bearer, body)) return *refused;
  if (stop_.load()) return refuse("not_running", "the run is stopping", body);
  std::vector<std::size_t> chosen;
  if (std::string e = select(req, chosen); !e.empty()) {
    return refuse(e.rfind("unknown antenna", 0) == 0 ? "unknown_antenna" : "unknown_group", e,
                  body);
  }
  if (chosen.empty())
    return refuse("unknown_group", "the antennas and groups name no stream", body);
  int64_t start_ns = req.start.unix_ns, end_ns = req.end.unix_ns;
  // CODIF frame time: converted with the first chosen stream's timing (when it has frames).
  std::string why;
  const bool known = (!req.start.codif && !req.end.codif) ||
                     codif_window(streams_[chosen.front()], req, start_ns, end_ns, why);
  if (!why.empty()) return refuse("bad_window", why, body);
  if (known && end_ns <= start_ns) {
    return refuse("bad_window", "end is not after start: the window is empty", body);
  }
  Windows windows;
  if (auto refused = stream_windows(req, chosen, start_ns, end_ns, windows, body)) return *refused;
  if (known) {
    if (auto refused = check_windows(req, chosen, windows, end_ns - start_ns, body))
      return *refused;
  }
  std::lock_guard lock(mu_);
  if (queue_.size() >= options_.max_queued) {
    counters_.refused[reason_index("busy")].fetch_add(1);
    return {{"ok", false},
            {"reason", "busy"},
            {"error", fmt::format("{} dumps are queued already; try again", queue_.size())}};
  }
  auto job = std::make_shared<Job>();
  job->id = next_id_++;
  job->label = req.label;
  job->body = body;
  job->received = format_utc_ns(options_.now_ns());
  job->start_ns = req.start.unix_ns;
  job->end_ns = req.end.unix_ns;
  job->name = fmt::format("{:04}", job->id) + (req.label.empty() ? "" : "-" + req.label);
  job->dm = req.dm;
  job->ref_mhz = windows.ref_mhz;
  job->ref_default = req.dm && !req.ref_freq_mhz;
  for (std::size_t i : chosen)
    plan_stream(*job, i, req);
  job->expected = expected_bytes(*job);
  place(*job);
  uint64_t not_retained = 0;
  for (const StreamPlan& p : job->streams) {
    for (const json& r : p.not_retained)
      not_retained += r.at("frames").get<uint64_t>();
  }
  counters_.frames_not_retained.fetch_add(not_retained);
  json a = answer(*job);
  a["queued_behind"] = queue_.size() + (busy_ ? 1 : 0);
  queue_.push_back(job);
  log_.push_back(job);
  counters_.queued.store(queue_.size());
  cv_.notify_all();
  return a;
}

// The formula's inputs, so that dump.json says how each stream's window was cut.
json DumpService::dispersion_json(const Job& job) {
  return daemon::dispersion_json(*job.dm, job.ref_mhz, job.ref_default);
}

json DumpService::answer(const Job& job) const {
  json streams = json::array();
  for (const StreamPlan& p : job.streams) {
    const config::StreamRef& ref = streams_[p.stream].ref;
    const auto& itf = config_.capture.interfaces[ref.interface];
    const auto& g = itf.groups[ref.group];
    json s{{"interface", itf.name},
           {"group", config::format_ipv4(g.address) + ":" + std::to_string(g.port)},
           {"antenna", config_.streams.antennas[ref.antenna].name}};
    if (p.known) {
      s["window"] = range_json(p.window_first, p.window_last);
      s["window"]["start"] = format_utc_ns(p.window_start_ns);
      s["window"]["end"] = format_utc_ns(p.window_end_ns);
    }
    if (job.dm && p.band) {
      s["frequency_mhz"] = {{"low", p.band->low_mhz}, {"high", p.band->high_mhz}};
      s["delay_seconds"] = {{"start", static_cast<double>(p.start_delay_s)},
                            {"end", static_cast<double>(p.end_delay_s)}};
    }
    s["retained"] = p.serve ? range_json(p.first, p.last) : json(nullptr);
    if (p.serve) s["served_when_arrived"] = p.future;
    s["not_retained"] = p.not_retained;
    if (!p.note.empty()) s["note"] = p.note;
    json files = json::array();
    for (const auto* f : {&p.files.raw, &p.files.codifhdr, &p.files.vdifhdr, &p.files.pcap}) {
      if (!f->empty()) files.push_back((job.dir / *f).string());
    }
    s["files"] = files;
    streams.push_back(s);
  }
  json a{{"ok", true},
         {"id", job.id},
         {"label", job.label},
         {"directory", job.dir.string()},
         {"manifest", (job.dir / "dump.json").string()},
         {"state", job.state},
         {"streams", streams}};
  if (job.dm) a["dispersion"] = dispersion_json(job);
  return a;
}

void DumpService::run() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return quit_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = queue_.front();
      queue_.pop_front();
      busy_ = true;
      job->state = "writing";
      counters_.queued.store(queue_.size());
    }
    write_job(*job);
    {
      std::lock_guard lock(mu_);
      busy_ = false;
      job->state = job->error.empty() ? "written" : "failed";
    }
    cv_.notify_all();
  }
}

std::filesystem::path DumpService::dump_root(std::size_t target) const {
  return targets_->directory(target) / run_dir_.filename() / "dumps";
}

// What a dump may write: its frames in every format, about a slot's bytes each.
uint64_t DumpService::expected_bytes(const Job& job) const {
  uint64_t n = 0;
  for (const StreamPlan& p : job.streams) {
    if (!p.serve) continue;
    const capture::StreamRing& ring = streams_[p.stream].retention->ring();
    n += (p.last - p.first + 1) * (ring.payload_stride() + ring.header_stride());
  }
  return n * std::max<std::size_t>(config_.retention.formats.size(), 1);
}

// The dump's directory: on the output target with the most room for it (OutputTargets::place,
// as the run's files), or the run directory's target when none is in rotation now (it is tried
// again when the dump is written). Under mu_, or before the job is shared.
void DumpService::place(Job& job) {
  const std::optional<std::size_t> t = targets_->place(job.expected);
  job.placed = t.has_value();
  job.target = t.value_or(0);
  job.dir = dump_root(job.target) / job.name;
}

void DumpService::release(Job& job, uint64_t bytes) {
  if (job.placed) targets_->file_closed(job.target, job.expected, bytes);
  job.placed = false;
}

// One pass over the job's streams on its target. The first error that says the target is full
// or failing, when `stop_at_fault` (another target may take the dump), ends the pass: its
// errno, else 0.
int DumpService::write_streams(Job& job, writers::StreamDumper& dumper, bool stop_at_fault) {
  for (StreamPlan& p : job.streams) {
    p.result = {};
    if (!p.serve) continue;
    writers::StreamDumpRequest r;
    r.retention = streams_[p.stream].retention;
    r.pin = p.pin;
    r.from_pos = p.from_pos;
    r.first_index = p.first;
    r.last_index = p.last;
    r.wait_until_ns = p.wait_until_ns;
    r.syncs = streams_[p.stream].syncs;
    r.format = streams_[p.stream].format;
    r.vdif = streams_[p.stream].vdif;
    r.now_ns = options_.now_ns;
    r.hold_pin = stop_at_fault;
    p.progress->reset();  // a pass on another target starts again from nothing
    r.progress = p.progress.get();
    const writers::Status placed = place_files(job, p.files, r.files);
    if (placed.ok()) p.result = dumper.run(r, stop_);
    if (!placed.ok()) {
      p.result.error_code = placed.code();
      p.result.errors.push_back(placed.message());
      p.result.not_written = {p.first, p.last};
      p.result.not_written_reason = "dump directory: " + placed.message();
    }
    if (!stop_at_fault && p.pinned) {  // written: its slots go back to capture now
      streams_[p.stream].retention->unpin(p.pin);
      p.pinned = false;
    }
    if (stop_at_fault && target_fault(p.result.error_code)) {
      skip_from(job, &p - job.streams.data() + 1,
                "not written: the output target failed under an earlier stream");
      return p.result.error_code;
    }
  }
  return 0;
}

// Streams `first`.. of the job are not written (on this target), for `why`.
void DumpService::skip_from(Job& job, std::size_t first, const std::string& why) {
  for (std::size_t k = first; k < job.streams.size(); ++k) {
    StreamPlan& p = job.streams[k];
    if (!p.serve) continue;
    p.result = {};
    p.result.not_written = {p.first, p.last};
    p.result.not_written_reason = why;
  }
}

// The dump's files in its directory, which is created (contained in its target) on the way.
writers::Status DumpService::place_files(const Job& job, const writers::DumpFiles& names,
                                         writers::DumpFiles& out) const {
  const std::filesystem::path target = targets_->directory(job.target);
  const std::filesystem::path rel = job.dir.lexically_relative(target);
  for (auto [name, path] :
       {std::pair{&names.raw, &out.raw}, std::pair{&names.codifhdr, &out.codifhdr},
        std::pair{&names.vdifhdr, &out.vdifhdr}, std::pair{&names.pcap, &out.pcap}}) {
    if (name->empty()) continue;
    if (writers::Status s = writers::place_in_directory(target, (rel / *name).string(), *path); !s)
      return s;
  }
  return {};
}

// Target `job.target` failed under the dump (errno `err`): out of rotation, and the dump placed
// on another target, its files on the failed one removed. False when no other target is in
// rotation: the dump stays where it is, with what it could write there.
bool DumpService::move_elsewhere(Job& job, int err) {
  std::string why;
  for (const StreamPlan& p : job.streams) {
    if (why.empty() && !p.result.errors.empty()) why = p.result.errors.front();
  }
  targets_->take_out(job.target, err, why);
  std::lock_guard lock(mu_);
  const std::optional<std::size_t> t = targets_->place(job.expected);
  if (!t) return false;
  for (const StreamPlan& p : job.streams) {
    for (const writers::FileRecord& f : p.result.files) {
      std::error_code ec;
      std::filesystem::remove(f.path, ec);
    }
  }
  std::error_code ec;
  std::filesystem::remove(job.dir, ec);  // only when empty: nothing else of it is there
  job.retries.push_back({{"directory", job.dir.string()}, {"error", why}});
  if (options_.log) {
    options_.log(DumpLogLevel::warn,
                 fmt::format("dump {}: output target {} failed ({}); writing it again on {}",
                             job.name, targets_->directory(job.target).string(), why,
                             targets_->directory(*t).string()));
  }
  release(job, 0);
  job.placed = true;
  job.target = *t;
  job.dir = dump_root(*t) / job.name;
  return true;
}

void DumpService::write_job(Job& job) {
  const auto t0 = std::chrono::steady_clock::now();
  writers::RateLimiter rate(config_.retention.write_rate);
  writers::StreamDumper dumper(*own_stager_, rate);
  // With several targets every stream's frames stay pinned until the dump is written whole,
  // so that a target failing under it can be replaced by another without losing a frame.
  const bool can_move = targets_->size() > 1;
  {
    std::lock_guard lock(mu_);
    if (!job.placed || !targets_->in_rotation(job.target)) {
      release(job, 0);
      place(job);
    }
  }
  std::string no_target;
  for (std::size_t tries = 0; tries <= targets_->size(); ++tries) {
    if (!job.placed && targets_->size() > 1) {
      no_target = "no output target in rotation (every target full or failed)";
      skip_from(job, 0, no_target);
      break;
    }
    const int err = write_streams(job, dumper, can_move);
    if (err == 0 || !move_elsewhere(job, err)) break;
  }
  for (StreamPlan& p : job.streams) {
    if (p.pinned) streams_[p.stream].retention->unpin(p.pin);
  }
  finish_job(job, std::chrono::steady_clock::now() - t0, no_target);
}

// One stream's outcome in dump.json (on top of its answer).
json DumpService::stream_outcome(const StreamPlan& p, json s) const {
  return stream_outcome_json(p.result, std::move(s));
}

// dump.json in the dump's directory or, when that cannot be written (its disk is full), in the
// same place on another target, so that the reason is on disk somewhere; empty: nowhere.
std::filesystem::path DumpService::save_dump_json(const Job& job, const json& m,
                                                  std::string& error) const {
  const std::string text = m.dump(2) + "\n";
  std::vector<std::filesystem::path> dirs{job.dir};
  for (std::size_t t = 0; t < targets_->size(); ++t) {
    if (t != job.target) dirs.push_back(dump_root(t) / job.name);
  }
  for (const std::filesystem::path& d : dirs) {
    const writers::Status made = writers::make_directories(d);
    const std::string err =
        made.ok() ? replace_file_atomically((d / "dump.json").string(), text) : made.message();
    if (err.empty()) return d / "dump.json";
    if (error.empty()) error = err;
  }
  return {};
}

void DumpService::finish_job(Job& job, std::chrono::steady_clock::duration took,
                             const std::string& no_target) {
  const double secs = std::chrono::duration<double>(took).count();
  uint64_t bytes = 0, not_written = 0, fills = 0, frames = 0;
  std::string error = no_target;
  json streams = answer(job).at("streams");
  for (std::size_t k = 0; k < job.streams.size(); ++k) {
    const StreamPlan& p = job.streams[k];
    streams[k] = stream_outcome(p, streams[k]);
    const writers::StreamDumpResult& res = p.result;
    if (error.empty() && (!res.errors.empty() || !res.write_loss.empty())) {
      error = stream_name(p.stream) + ": " +
              (res.errors.empty() ? "records lost to write errors" : res.errors.front());
    }
    bytes += res.bytes;
    fills += res.fill_frames;
    frames += res.frames;
    not_written += frames_not_written(res);
  }
  json m{{"dump", job.id},
         {"label", job.label},
         {"run", config_.run.name},
         {"state", error.empty() ? "written" : "failed"},
         {"received", job.received},
         {"written", format_utc_ns(options_.now_ns())},
         {"duration_seconds", secs},
         {"request", json::parse(job.body, nullptr, false)},
         {"formats", json::array()},
         {"write_rate_bytes_per_second", config_.retention.write_rate},
         {"directory", job.dir.string()},
         {"retries", job.retries},
         {"streams", streams}};
  for (config::OutputFormat f : config_.retention.formats)
    m["formats"].push_back(std::string(config::to_string(f)));
  if (job.dm) m["dispersion"] = dispersion_json(job);
  if (!error.empty()) m["error"] = error;
  std::string json_error;
  const std::filesystem::path saved = save_dump_json(job, m, json_error);
  if (saved.empty() && error.empty()) error = "dump.json not written: " + json_error;
  {
    std::lock_guard lock(mu_);
    release(job, bytes);
    job.duration_s = secs;
    job.written = m.at("written");
    job.error = error;
    job.dump_json = saved;
  }
  counters_.bytes.fetch_add(bytes);
  counters_.fill_frames.fetch_add(fills);
  counters_.frames_not_retained.fetch_add(not_written);
  counters_.duration_ns.fetch_add(static_cast<uint64_t>(secs * 1e9));
  (error.empty() ? counters_.served : counters_.failed).fetch_add(1);
  log_outcome(job, frames, fills, bytes, saved, json_error);
}

void DumpService::log_outcome(const Job& job, uint64_t frames, uint64_t fills, uint64_t bytes,
                              const std::filesystem::path& saved,
                              const std::string& json_error) const {
  if (!options_.log) return;
  const std::string where =
      saved.empty() ? "dump.json not written (" + json_error + ")" : saved.string();
  if (job.error.empty()) {
    options_.log(DumpLogLevel::info,
                 fmt::format("dump {} written: {} frames and {} fill frames, {} bytes; {}",
                             job.name, frames, fills, bytes, where));
  } else {
    options_.log(DumpLogLevel::error,
                 fmt::format("dump {} failed: {}; {}", job.name, job.error, where));
  }
}

json DumpService::trigger_log() const {
  std::lock_guard lock(mu_);
  json out = json::array();
  for (const auto& job : log_)
    out.push_back(log_entry(*job));
  for (const json& r : refused_log_)
    out.push_back(r);
  return out;
}

json DumpService::status(uint64_t id) const {
  std::lock_guard lock(mu_);
  // log_ holds the accepted dumps in the order of their ids, which follow one another.
  const auto it = std::find_if(log_.begin(), log_.end(),
                               [id](const std::shared_ptr<Job>& j) { return j->id == id; });
  if (it != log_.end()) return log_entry(**it);
  const std::string ids = log_.empty() ? "none accepted yet"
                          : log_.size() == 1
                              ? fmt::format("dump {}", log_.front()->id)
                              : fmt::format("dumps {}..{}", log_.front()->id, log_.back()->id);
  return {{"ok", false},
          {"reason", "unknown_dump"},
          {"error", fmt::format("no dump {} in this run ({})", id, ids)}};
}

// One dump as the trigger log and status() show it: its answer, its state and outcome so far,
// and its progress. Under mu_.
json DumpService::log_entry(const Job& job) const {
  json a = answer(job);
  a["received"] = job.received;
  if (!job.written.empty()) {
    a["written"] = job.written;
    a["manifest"] = job.dump_json.empty() ? json(nullptr) : json(job.dump_json.string());
  }
  a["duration_seconds"] = job.duration_s;
  if (!job.error.empty()) a["error"] = job.error;
  if (!job.retries.empty()) a["retries"] = job.retries;
  json total{{"frames", 0},        {"fill_frames", 0},  {"bytes", 0},  {"frames_planned", 0},
             {"window_frames", 0}, {"streams_done", 0}, {"streams", 0}};
  for (std::size_t k = 0; k < job.streams.size(); ++k) {
    const json p = progress_json(job, job.streams[k]);
    for (const char* key : {"frames", "fill_frames", "bytes", "frames_planned", "window_frames"})
      total[key] = total[key].get<uint64_t>() + p.at(key).get<uint64_t>();
    if (job.streams[k].serve) {
      total["streams"] = total["streams"].get<uint64_t>() + 1;
      if (p.at("state") == "done")
        total["streams_done"] = total["streams_done"].get<uint64_t>() + 1;
    }
    a["streams"][k]["progress"] = p;
  }
  a["progress"] = total;
  return a;
}

// One stream's progress: while the dump is queued or writing, the counts the dump thread has
// stored so far (atomics); once it is written or failed, its result (what dump.json says), which
// the dump thread no longer touches (the state is set under mu_ after it). Under mu_.
json DumpService::progress_json(const Job& job, const StreamPlan& p) {
  const bool finished = job.state == "written" || job.state == "failed";
  json j{{"state", "not_served"},
         {"frames_planned", p.serve ? p.last - p.first + 1 : uint64_t{0}},
         {"window_frames", p.known ? p.window_last - p.window_first + 1 : uint64_t{0}}};
  if (finished) {
    if (p.serve) j["state"] = "done";
    j["frames"] = p.result.frames;
    j["fill_frames"] = p.result.fill_frames;
    j["bytes"] = p.result.bytes;
    return j;
  }
  const writers::StreamDumpProgress& g = *p.progress;
  const int phase = g.phase.load(std::memory_order_acquire);
  if (p.serve) {
    j["state"] = phase == writers::StreamDumpProgress::done      ? "done"
                 : phase == writers::StreamDumpProgress::writing ? "writing"
                                                                 : "waiting";
  }
  j["frames"] = g.frames.load(std::memory_order_relaxed);
  j["fill_frames"] = g.fill_frames.load(std::memory_order_relaxed);
  j["bytes"] = g.bytes.load(std::memory_order_relaxed);
  return j;
}

}  // namespace rocecap::daemon
