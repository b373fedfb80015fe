#include "daemon/lib/dump_service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "config/token_file.hpp"
#include "config/units.hpp"
#include "daemon/lib/atomic_file.hpp"
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

// Frame index <-> Unix ns for one stream (doc/codif.md: frame i of a stream starts at
// epoch + (i / frames_per_period) periods + (i % frames_per_period) frame durations).
struct StreamClock {
  codif::Header h;
  codif::Timing t;
  i128 epoch_ns() const { return i128{codif::epoch_unix_seconds(h.epoch)} * 1'000'000'000; }
  i128 period_ns() const { return i128{t.period} * 1'000'000'000; }
  int64_t time_of(uint64_t i) const {
    const i128 fpp = t.frames_per_period;
    return static_cast<int64_t>(epoch_ns() + i128(i / t.frames_per_period) * period_ns() +
                                i128(i % t.frames_per_period) * period_ns() / fpp);
  }
  // The frame whose span holds `ns` (0 before the epoch).
  uint64_t index_at(int64_t ns) const {
    const i128 rel = i128{ns} - epoch_ns();
    if (rel <= 0) return 0;
    return static_cast<uint64_t>(rel * t.frames_per_period / period_ns());
  }
  int64_t unix_ns(const TriggerTime& tt) const {
    if (!tt.codif) return tt.unix_ns;
    const i128 base =
        (i128{codif::epoch_unix_seconds(static_cast<uint8_t>(tt.epoch))} + tt.seconds) *
        1'000'000'000;
    return static_cast<int64_t>(base + i128(tt.frame) * period_ns() / t.frames_per_period);
  }
};

// The CODIF header of the frame in retention position `pos` (pinned by the caller).
bool read_clock(const capture::Retention& ret, const codif::SyncSet& syncs, uint64_t pos,
                StreamClock& c) {
  const capture::StreamRing& ring = ret.ring();
  const capture::SlotId id = ret.at(pos);
  const capture::SlotMeta& m = ring.meta(id);
  std::array<std::byte, codif::kHeaderBytes> bytes{};
  const std::size_t off = m.udp_payload_offset;
  if (off + codif::kHeaderBytes <= m.header_bytes) {
    std::memcpy(bytes.data(), ring.header(id).data() + off, bytes.size());
  } else if (ring.payload_kind() == capture::memory::MemoryKind::host && off <= m.header_bytes) {
    const std::size_t head = m.header_bytes - off;
    std::memcpy(bytes.data(), ring.header(id).data() + off, head);
    std::memcpy(bytes.data() + head, ring.payload(id).data(), bytes.size() - head);
  } else {
    return false;  // the header lies in GPU memory: capture.header_split too small
  }
  return codif::decode(bytes, syncs, c.h) &&
         codif::validate(c.h, m.wire_bytes - off, c.t) == codif::Invalid::ok;
}

json range_json(uint64_t first, uint64_t last, const std::string& reason = {}) {
  json j{{"first_frame", first}, {"last_frame", last}, {"frames", last - first + 1}};
  if (!reason.empty()) j["reason"] = reason;
  return j;
}

const char* extension(config::OutputFormat f) {
  switch (f) {
    case config::OutputFormat::raw:
      return "codif";
    case config::OutputFormat::codifhdr:
      return "chead";
    case config::OutputFormat::pcap:
      return "pcap";
    case config::OutputFormat::vdifhdr:  // retention is CODIF only (check_retention)
      return "vhead";
  }
  return "dat";
}

std::size_t reason_index(const std::string& reason) {
  for (std::size_t i = 0; i < DumpCounters::kReasonCount; ++i) {
    if (reason == DumpCounters::kReasons[i]) return i;
  }
  return 0;
}

// A CODIF-time window as Unix ns, with the timing of the newest frame `s` retains (pinned
// while it is read); false when the stream has no frame yet.
bool codif_window(const DumpStream& s, const TriggerRequest& r, int64_t& start, int64_t& end) {
  capture::Retention& ret = *s.retention;
  uint64_t pinned = 0;
  const auto pin = ret.pin(ret.range().head, pinned);
  if (!pin) return false;
  const uint64_t tail = ret.range().tail;
  StreamClock clock;
  const bool ok = pinned < tail && read_clock(ret, s.syncs, tail - 1, clock);
  ret.unpin(*pin);
  if (!ok) return false;
  start = clock.unix_ns(r.start);
  end = clock.unix_ns(r.end);
  return true;
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

}  // namespace

struct DumpService::StreamPlan {
  std::size_t stream = 0;
  bool known = false;  // the stream had frames: the window has frame numbers
  uint64_t window_first = 0, window_last = 0;
  bool serve = false;
  uint64_t first = 0, last = 0;  // planned: retained now, or arriving within the bound
  bool future = false;           // part of it has not arrived yet
  json not_retained = json::array();
  std::string note;
  bool pinned = false;
  std::size_t pin = 0;
  uint64_t from_pos = 0;
  int64_t wait_until_ns = 0;
  writers::DumpFiles files;
  writers::StreamDumpResult result;
};

struct DumpService::Job {
  uint64_t id = 0;
  std::string label, body, received;
  int64_t start_ns = 0, end_ns = 0;
  std::filesystem::path dir;
  std::vector<StreamPlan> streams;
  std::string state = "queued";
  double duration_s = 0;
  std::string written;
};

DumpService::DumpService(const config::RunConfig& config, std::filesystem::path run_dir,
                         std::vector<DumpStream> streams, DumpServiceOptions options)
    : config_(config),
      run_dir_(std::move(run_dir)),
      streams_(std::move(streams)),
      options_(std::move(options)),
      next_id_(first_free_dump_id(run_dir_ / "dumps")) {
  if (!options_.now_ns) options_.now_ns = wall_now_ns;
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
  if (pinned >= tail || !read_clock(ret, ds.syncs, tail - 1, clock)) {
    p.note = pinned >= tail ? "no frame received yet on this stream: nothing retained"
                            : "the newest frame's CODIF header could not be read";
    ret.unpin(*pin);
    p.pinned = false;
    return;
  }
  p.known = true;
  const int64_t start = clock.unix_ns(req.start), end = clock.unix_ns(req.end);
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
  const config::StreamRef& ref = ds.ref;
  const auto& itf = config_.capture.interfaces[ref.interface];
  const auto& g = itf.groups[ref.group];
  const std::string stem = fmt::format("{}_{}_{}_{}", itf.name, config::format_ipv4(g.address),
                                       g.port, config_.streams.antennas[ref.antenna].name);
  for (config::OutputFormat f : config_.retention.formats) {
    const std::filesystem::path path = job.dir / (stem + "." + extension(f));
    if (f == config::OutputFormat::raw) p.files.raw = path;
    if (f == config::OutputFormat::codifhdr) p.files.codifhdr = path;
    if (f == config::OutputFormat::pcap) p.files.pcap = path;
  }
}

json DumpService::handle(std::string_view body_view, bool http, const std::string& bearer) {
  const std::string body(body_view);
  counters_.received.fetch_add(1);
  TriggerParse parsed = parse_trigger_request(body);
  if (auto* e = std::get_if<TriggerError>(&parsed)) return refuse(e->reason, e->message, body);
  TriggerRequest& req = std::get<TriggerRequest>(parsed);
  if (http && !token_.empty() && req.token.value_or("") != token_ && bearer != token_) {
    return refuse("unauthorized",
                  req.token || !bearer.empty() ? "wrong token"
                                               : "this endpoint needs the configured token "
                                                 "(\"token\" or Authorization: Bearer)",
                  body);
  }
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
  const bool known = (!req.start.codif && !req.end.codif) ||
                     codif_window(streams_[chosen.front()], req, start_ns, end_ns);
  if (known && end_ns <= start_ns) {
    return refuse("bad_window", "end is not after start: the window is empty", body);
  }
  if (known && end_ns - start_ns > config_.retention.retain.count()) {
    return refuse("too_long",
                  fmt::format("the window ({}) is longer than the retention (retention.retain "
                              "{}): it can never be served whole",
                              config::format_duration(std::chrono::nanoseconds(end_ns - start_ns)),
                              config::format_duration(config_.retention.retain)),
                  body);
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
  job->dir = run_dir_ / "dumps" /
             (fmt::format("{:04}", job->id) + (req.label.empty() ? "" : "-" + req.label));
  for (std::size_t i : chosen)
    plan_stream(*job, i, req);
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

json DumpService::answer(const Job& job) const {
  json streams = json::array();
  for (const StreamPlan& p : job.streams) {
    const config::StreamRef& ref = streams_[p.stream].ref;
    const auto& itf = config_.capture.interfaces[ref.interface];
    const auto& g = itf.groups[ref.group];
    json s{{"interface", itf.name},
           {"group", config::format_ipv4(g.address) + ":" + std::to_string(g.port)},
           {"antenna", config_.streams.antennas[ref.antenna].name}};
    if (p.known) s["window"] = range_json(p.window_first, p.window_last);
    s["retained"] = p.serve ? range_json(p.first, p.last) : json(nullptr);
    if (p.serve) s["served_when_arrived"] = p.future;
    s["not_retained"] = p.not_retained;
    if (!p.note.empty()) s["note"] = p.note;
    json files = json::array();
    for (const auto* f : {&p.files.raw, &p.files.codifhdr, &p.files.pcap}) {
      if (!f->empty()) files.push_back(f->string());
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
      job->state = "written";
    }
    cv_.notify_all();
  }
}

void DumpService::write_job(Job& job) {
  const auto t0 = std::chrono::steady_clock::now();
  writers::RateLimiter rate(config_.retention.write_rate);
  writers::StreamDumper dumper(*own_stager_, rate);
  std::string dir_error;
  if (const writers::Status s = writers::make_directories(job.dir); !s.ok()) {
    dir_error = s.message();
  }
  uint64_t bytes = 0, not_written = 0, fills = 0;
  json streams = answer(job).at("streams");
  for (std::size_t k = 0; k < job.streams.size(); ++k) {
    StreamPlan& p = job.streams[k];
    if (p.serve && dir_error.empty()) {
      writers::StreamDumpRequest r;
      r.retention = streams_[p.stream].retention;
      r.pin = p.pin;
      r.from_pos = p.from_pos;
      r.first_index = p.first;
      r.last_index = p.last;
      r.wait_until_ns = p.wait_until_ns;
      r.syncs = streams_[p.stream].syncs;
      r.files = p.files;
      r.now_ns = options_.now_ns;
      p.result = dumper.run(r, stop_);
    }
    if (p.pinned) streams_[p.stream].retention->unpin(p.pin);
    json& s = streams[k];
    const writers::StreamDumpResult& res = p.result;
    s["frames"] = res.frames;
    s["fill_frames"] = res.fill_frames;
    s["bytes"] = res.bytes;
    json gaps = json::array();
    for (const auto& g : res.gaps) {
      gaps.push_back({{"first_frame", g.first_index},
                      {"frames", g.count},
                      {"first_time", format_utc_ns(g.first_time_ns)}});
    }
    s["gaps"] = gaps;
    if (res.not_written) {
      const auto [a, b] = *res.not_written;
      s["not_written"] = range_json(a, b, res.not_written_reason);
      not_written += b - a + 1;
    } else if (p.serve && !dir_error.empty()) {
      s["not_written"] = range_json(p.first, p.last, "dump directory: " + dir_error);
      not_written += p.last - p.first + 1;
    }
    json files = json::array();
    for (const auto& f : res.files) {
      files.push_back({{"path", f.path.string()}, {"bytes", f.bytes}, {"frames", f.records}});
    }
    s["files"] = files;
    s["errors"] = res.errors;
    bytes += res.bytes;
    fills += res.fill_frames;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  json m{{"dump", job.id},
         {"label", job.label},
         {"run", config_.run.name},
         {"received", job.received},
         {"written", format_utc_ns(options_.now_ns())},
         {"duration_seconds", secs},
         {"request", json::parse(job.body, nullptr, false)},
         {"formats", json::array()},
         {"write_rate_bytes_per_second", config_.retention.write_rate},
         {"streams", streams}};
  for (config::OutputFormat f : config_.retention.formats)
    m["formats"].push_back(std::string(config::to_string(f)));
  if (!dir_error.empty()) m["error"] = dir_error;
  if (dir_error.empty()) {
    const std::string err =
        replace_file_atomically((job.dir / "dump.json").string(), m.dump(2) + "\n");
    if (!err.empty()) m["error"] = err;
  }
  {
    std::lock_guard lock(mu_);
    job.duration_s = secs;
    job.written = m.at("written");
  }
  counters_.bytes.fetch_add(bytes);
  counters_.fill_frames.fetch_add(fills);
  counters_.frames_not_retained.fetch_add(not_written);
  counters_.duration_ns.fetch_add(static_cast<uint64_t>(secs * 1e9));
  counters_.served.fetch_add(1);
}

json DumpService::trigger_log() const {
  std::lock_guard lock(mu_);
  json out = json::array();
  for (const auto& job : log_) {
    json a = answer(*job);
    a["received"] = job->received;
    if (!job->written.empty()) a["written"] = job->written;
    a["duration_seconds"] = job->duration_s;
    out.push_back(a);
  }
  for (const json& r : refused_log_)
    out.push_back(r);
  return out;
}

}  // namespace rocecap::daemon
