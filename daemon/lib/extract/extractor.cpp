#include "daemon/lib/extract/extractor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "config/units.hpp"
#include "daemon/lib/dumps/dispersion.hpp"
#include "daemon/lib/dumps/dump_json.hpp"
#include "daemon/lib/dumps/stream_clock.hpp"
#include "daemon/lib/dumps/trigger_request.hpp"
#include "daemon/lib/extract/extract_sink.hpp"
#include "daemon/lib/extract/recording.hpp"
#include "daemon/lib/reporting/atomic_file.hpp"
#include "writers/output_path.hpp"

namespace rocecap::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
__extension__ using i128 = __int128;

constexpr uint64_t kReadBytes = 4u << 20;  // read per pread: a few MiB of frames

int64_t wall_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TriggerRequest parse_request(const std::string& body) {
  TriggerParse parsed = parse_trigger_request(body);
  if (std::holds_alternative<StatusRequest>(parsed))
    throw ExtractError("the request asks for a dump's status: give start and end");
  if (const auto* e = std::get_if<TriggerError>(&parsed))
    throw ExtractError("request refused (" + e->reason + "): " + e->message);
  TriggerRequest r = std::get<TriggerRequest>(parsed);
  if (std::string why = check_label(r.label); !why.empty()) throw ExtractError("label: " + why);
  return r;
}

// The streams the request names (all when it names none), as DumpService selects them.
std::vector<std::size_t> choose(const Recording& rec, const TriggerRequest& r) {
  const config::RunConfig& c = rec.config;
  for (const std::string& a : r.antennas) {
    const auto& list = c.streams.antennas;
    if (std::none_of(list.begin(), list.end(), [&](const auto& x) { return x.name == a; })) {
      std::string names;
      for (const auto& x : list)
        names += (names.empty() ? "" : ", ") + x.name;
      throw ExtractError(fmt::format("unknown antenna '{}' (this run has: {})", a, names));
    }
  }
  auto group_of = [&](const config::StreamRef& ref) {
    const auto& g = c.capture.interfaces[ref.interface].groups[ref.group];
    return std::pair{config::format_ipv4(g.address),
                     config::format_ipv4(g.address) + ":" + std::to_string(g.port)};
  };
  auto group_matches = [&](const config::StreamRef& ref, const std::string& x) {
    const auto [addr, full] = group_of(ref);
    return x == addr || x == full;
  };
  for (const std::string& g : r.groups) {
    if (std::none_of(rec.refs.begin(), rec.refs.end(),
                     [&](const auto& ref) { return group_matches(ref, g); }))
      throw ExtractError(fmt::format("unknown group '{}' (write address:port as configured)", g));
  }
  std::vector<std::size_t> chosen;
  for (std::size_t i = 0; i < rec.refs.size(); ++i) {
    const config::StreamRef& ref = rec.refs[i];
    const std::string& antenna = c.streams.antennas[ref.antenna].name;
    const bool a = r.antennas.empty() ||
                   std::find(r.antennas.begin(), r.antennas.end(), antenna) != r.antennas.end();
    const bool g = r.groups.empty() || std::any_of(r.groups.begin(), r.groups.end(),
                                                   [&](auto& x) { return group_matches(ref, x); });
    if (a && g) chosen.push_back(i);
  }
  return chosen;
}

std::vector<config::OutputFormat> formats_of(const Recording& rec, const ExtractOptions& o) {
  std::vector<config::OutputFormat> f = o.formats;
  if (f.empty()) {
    if (rec.config.retention.enabled) f = rec.config.retention.formats;
    std::erase(f, config::OutputFormat::pcap);
    if (f.empty()) f = {config::OutputFormat::raw};
  }
  const bool vdif = rec.format.format == capture::StreamFormat::vdif;
  for (config::OutputFormat x : f) {
    if (x == config::OutputFormat::pcap)
      throw ExtractError("format pcap: the raw files keep no network headers to rebuild packets");
    if (x == config::OutputFormat::codifhdr && vdif)
      throw ExtractError("format codifhdr: this run's streams are VDIF (use vdifhdr)");
    if (x == config::OutputFormat::vdifhdr && !vdif)
      throw ExtractError("format vdifhdr: this run's streams are CODIF (use codifhdr)");
  }
  return f;
}

fs::path output_dir(const ExtractOptions& o, const Recording& rec, const std::string& label,
                    uint64_t& id) {
  id = 0;
  if (!o.out_dir.empty()) {
    std::error_code ec;
    if (fs::exists(o.out_dir, ec) && !fs::is_empty(o.out_dir, ec))
      throw ExtractError(o.out_dir.string() + ": exists and is not empty (never written over)");
    return o.out_dir;
  }
  const fs::path root = rec.run_dir / "extracts";
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t digits = name.find_first_not_of("0123456789");
    if (digits == 0) continue;  // not an extract's directory
    try {
      id = std::max<uint64_t>(id, std::stoull(name.substr(0, digits)));
    } catch (const std::exception&) {
    }
  }
  ++id;
  return root / (fmt::format("{:04}", id) + (label.empty() ? "" : "-" + label));
}

struct Window {
  bool known = false;
  int64_t start_ns = 0, end_ns = 0;
  uint64_t first = 0, last = 0;
  std::optional<config::FrequencyRange> band;
  std::optional<SweptWindow> swept;
};

// The stream's window in its own frame numbers; throws for a window no frame can have.
Window stream_window(const Recording& rec, const RecordedStream& st, const TriggerRequest& r,
                     double ref_mhz) {
  Window w;
  if (st.files.empty()) return w;
  const StreamClock clock{st.files.front().first().h, st.files.front().first().t};
  const std::string name = dump_stream_name(rec.config, st.ref);
  std::string why = clock.unix_ns(r.start, "start", w.start_ns);
  if (why.empty()) why = clock.unix_ns(r.end, "end", w.end_ns);
  if (!why.empty()) throw ExtractError("stream " + name + ": " + why);
  if (w.end_ns <= w.start_ns) throw ExtractError("'end' is not after 'start'");
  if (r.dm) {
    w.band = config::stream_frequencies(rec.config, st.ref);
    if (!w.band) {
      throw ExtractError(
          "a dm needs each stream's frequencies, and streams.frequencies does not "
          "give those of stream " +
          name);
    }
    w.swept = sweep_window(w.start_ns, w.end_ns, *r.dm, ref_mhz, *w.band);
    if (!w.swept)
      throw ExtractError("stream " + name + ": the dispersed window is beyond Unix nanoseconds");
    w.start_ns = w.swept->start_ns;
    w.end_ns = w.swept->end_ns;
  }
  if (i128{w.start_ns} < clock.epoch_ns()) {
    throw ExtractError(
        fmt::format("'start' ({}) is before the reference epoch of stream {}: no "
                    "frame number can name it",
                    format_utc_ns(w.start_ns), name));
  }
  w.known = true;
  w.first = clock.index_at(w.start_ns);
  w.last = clock.index_at(w.end_ns - 1);
  return w;
}

// Why the recording lacks [first, first + count): what the manifest lists there, if anything.
std::string missing_reason(const RecordedStream& st, uint64_t first, uint64_t count) {
  for (const MissingRange& m : st.missing) {
    if (m.first < first + count && first < m.first + m.count) return m.reason;
  }
  return "not in the recording's files (a resynchronisation of the stream, or frames the "
         "manifest does not account for)";
}

// Writes the stream's window [first, last] (inside the recording) from its files. Returns how
// many of the frames read did not read as the stream's frames (corrupt): left out, their
// places filled.
uint64_t copy_window(const Recording& rec, const RecordedStream& st, uint64_t first, uint64_t last,
                     ExtractSink& sink) {
  uint64_t unreadable = 0;
  uint64_t next = first;
  std::vector<std::byte> buf;
  for (const FrameFile& file : st.files) {
    if (next > last || file.first().index > last) break;
    if (file.last_index() < next) continue;
    const uint64_t fb = file.frame_bytes();
    const uint64_t per_read = std::max<uint64_t>(1, kReadBytes / fb);
    buf.resize(per_read * fb);
    for (uint64_t k = file.seek(next); k < file.frames() && next <= last;) {
      const uint64_t n = std::min(per_read, file.frames() - k);
      file.read(k, n, buf);
      for (uint64_t j = 0; j < n && next <= last; ++j) {
        const auto bytes = std::span<const std::byte>(buf).subspan(j * fb, fb);
        const std::optional<RecordedFrame> f = decode_recorded(rec.format, bytes, fb);
        unreadable += f ? 0 : 1;
        if (!f || f->index < next) continue;
        if (f->index > last) {
          next = last + 1;
          break;
        }
        sink.fill(next, f->index - next, missing_reason(st, next, f->index - next));
        sink.frame(*f, bytes);
        next = f->index + 1;
      }
      k += n;
    }
  }
  if (next <= last) sink.fill(next, last - next + 1, missing_reason(st, next, last - next + 1));
  return unreadable;
}

json stream_json(const Recording& rec, const RecordedStream& st, const Window& w) {
  const config::RunConfig& c = rec.config;
  const auto& itf = c.capture.interfaces[st.ref.interface];
  const auto& g = itf.groups[st.ref.group];
  json s{{"interface", itf.name},
         {"group", config::format_ipv4(g.address) + ":" + std::to_string(g.port)},
         {"antenna", c.streams.antennas[st.ref.antenna].name}};
  if (w.known) {
    s["window"] = range_json(w.first, w.last);
    s["window"]["start"] = format_utc_ns(w.start_ns);
    s["window"]["end"] = format_utc_ns(w.end_ns);
  }
  if (w.swept && w.band) {
    s["frequency_mhz"] = {{"low", w.band->low_mhz}, {"high", w.band->high_mhz}};
    s["delay_seconds"] = {{"start", static_cast<double>(w.swept->start_delay_s)},
                          {"end", static_cast<double>(w.swept->end_delay_s)}};
  }
  return s;
}

// One stream: its window, what of it the recording holds, the files. Returns its dump.json
// entry; `ok` false on a write error.
json extract_stream(const Recording& rec, const RecordedStream& st, const Window& w,
                    const std::vector<config::OutputFormat>& formats, const fs::path& dir,
                    bool& ok) {
  json s = stream_json(rec, st, w);
  s["not_recorded"] = json::array();
  s["problems"] = st.problems;
  if (!w.known) {
    s["recorded"] = nullptr;
    s["note"] = st.manifest == nullptr ? "not in the run's manifest"
                                       : "no raw file of this stream holds a frame";
    return stream_outcome_json({}, s);
  }
  uint64_t rec_first = st.files.front().first().index, rec_last = 0;
  for (const FrameFile& f : st.files)
    rec_last = std::max(rec_last, f.last_index());
  const bool running = rec.manifest.value("state", "") == "running";
  uint64_t first = w.first, last = w.last;
  if (first < rec_first) {
    const uint64_t upto = std::min(last, rec_first - 1);
    s["not_recorded"].push_back(range_json(first, upto, "before the recording's first frame"));
    first = upto + 1;
  }
  if (last > rec_last) {
    const uint64_t from = std::max(first, rec_last + 1);
    s["not_recorded"].push_back(
        range_json(from, last,
                   running ? "after the last frame in the files yet (the run is still recording)"
                           : "after the recording's last frame"));
    last = from - 1;
  }
  if (first > last || last < rec_first) {
    s["recorded"] = nullptr;
    return stream_outcome_json({}, s);
  }
  s["recorded"] = range_json(first, last);
  writers::DumpFiles files = dump_file_names(rec.config, st.ref, formats,
                                             rec.format.format == capture::StreamFormat::vdif);
  for (fs::path* p : {&files.raw, &files.codifhdr, &files.vdifhdr}) {
    if (!p->empty()) *p = dir / *p;
  }
  ExtractSink sink(files, st.files.front().first(),
                   rec.format.format == capture::StreamFormat::vdif);
  if (const uint64_t bad = copy_window(rec, st, first, last, sink); bad != 0) {
    s["problems"].push_back(
        fmt::format("{} frame(s) in the window's files did not read as "
                    "this stream's frames (corrupt?): left out, filled",
                    bad));
  }
  sink.close();
  ok = ok && sink.result().errors.empty() && sink.result().write_loss.empty();
  s = stream_outcome_json(sink.result(), s);
  for (std::size_t k = 0; k < sink.gap_reasons().size(); ++k)
    s["gaps"][k]["reason"] = sink.gap_reasons()[k];
  return s;
}

}  // namespace

ExtractOutcome extract(const ExtractOptions& o) {
  const auto began = std::chrono::steady_clock::now();
  const auto now = o.now_ns ? o.now_ns : wall_now_ns;
  const TriggerRequest r = parse_request(o.request);
  const Recording rec = read_recording(o.run_dir);
  const std::vector<config::OutputFormat> formats = formats_of(rec, o);
  const std::vector<std::size_t> chosen = choose(rec, r);
  double ref_mhz = 0;
  if (r.dm) {
    const std::optional<double> top = config::top_of_band_mhz(rec.config);
    if (!r.ref_freq_mhz && !top)
      throw ExtractError(
          "a dm needs streams.frequencies in the run file (or ref_freq and "
          "each stream's frequencies)");
    ref_mhz = r.ref_freq_mhz.value_or(top.value_or(0));
  }
  std::vector<RecordedStream> streams;
  for (std::size_t i : chosen)
    streams.push_back(open_stream(rec, i));
  std::vector<Window> windows;  // every window checked before anything is written
  for (const RecordedStream& st : streams)
    windows.push_back(stream_window(rec, st, r, ref_mhz));
  uint64_t id = 0;
  ExtractOutcome out;
  out.dir = output_dir(o, rec, r.label, id);
  if (const writers::Status made = writers::make_directories(out.dir); !made.ok())
    throw ExtractError(out.dir.string() + ": " + made.message());
  out.ok = true;
  json list = json::array();
  for (std::size_t k = 0; k < streams.size(); ++k)
    list.push_back(extract_stream(rec, streams[k], windows[k], formats, out.dir, out.ok));
  json m{{"extract", id == 0 ? json(nullptr) : json(id)},
         {"label", r.label},
         {"run", rec.config.run.name},
         {"state", out.ok ? "written" : "failed"},
         {"written", format_utc_ns(now())},
         {"duration_seconds",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()},
         {"request", json::parse(redact_request(o.request), nullptr, false)},
         {"formats", json::array()},
         {"directory", out.dir.string()},
         {"recording",
          {{"run_directory", rec.run_dir.string()},
           {"manifest_state", rec.manifest.value("state", "")}}},
         {"streams", list}};
  for (config::OutputFormat f : formats)
    m["formats"].push_back(std::string(config::to_string(f)));
  if (r.dm) m["dispersion"] = dispersion_json(*r.dm, ref_mhz, !r.ref_freq_mhz);
  if (!out.ok) m["error"] = "write errors: see the streams' errors";
  if (const std::string e =
          replace_file_atomically((out.dir / "dump.json").string(), m.dump(2) + "\n");
      !e.empty()) {
    // A full disk: the outcome (which files were cut, what was lost) is still the caller's.
    const std::string before = m.value("error", std::string());
    out.ok = false;
    m["state"] = "failed";
    m["error"] = (before.empty() ? "" : before + "; ") + "dump.json not written: " + e;
  }
  out.dump = std::move(m);
  return out;
}

}  // namespace rocecap::daemon
