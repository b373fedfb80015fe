#include "rundir/recover.hpp"

#include <sys/stat.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "capture/net/packet.hpp"
#include "config/loader.hpp"
#include "config/name_template.hpp"
#include "rundir/atomic_write.hpp"
#include "rundir/file_scan.hpp"
#include "rundir/utc_time.hpp"

namespace rocecap::rundir {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool final_state(const std::string& s) {
  return s == "stopped" || s == "failed" || s == "recovered";
}

std::string ip(uint32_t a) {
  return capture::net::format_ipv4(a).data();
}

json zero_stream(const config::RunConfig& cfg, const config::StreamRef& ref) {
  const auto& ic = cfg.capture.interfaces[ref.interface];
  const auto& g = ic.groups[ref.group];
  const auto& a = cfg.streams.antennas[ref.antenna];
  json s = {{"interface", ic.name},  {"group", ip(g.address)}, {"port", g.port},
            {"antenna", a.name},     {"source", ip(a.source)}, {"first_frame", nullptr},
            {"last_frame", nullptr}, {"gaps", json::array()},  {"files", json::array()}};
  for (const char* k :
       {"packets", "bytes", "lost", "duplicate", "late", "late_dropped", "invalid", "resync",
        "fill_frames", "write_errors", "qp_recoveries", "gaps_not_listed"})
    s[k] = 0;
  return s;
}

// The manifest found, or a skeleton from the config when there is none.
json base_manifest(const config::RunConfig& cfg, const fs::path& run_dir) {
  json m = read_manifest(run_dir);
  if (!m.is_null()) return m;
  m = {{"run", cfg.run.name},
       {"state", "unknown"},
       {"started", nullptr},
       {"stopped", nullptr},
       {"config", {{"file", cfg.source_path}, {"text", cfg.source_text}}},
       {"streams", json::array()},
       {"interfaces", json::array()},
       {"rejected", json::object()},
       {"errors", json::array()},
       {"errors_not_listed", 0},
       {"failure", nullptr}};
  return m;
}

json& stream_entry(json& m, const config::RunConfig& cfg, const config::StreamRef& ref) {
  const json want = zero_stream(cfg, ref);
  for (json& s : m["streams"]) {
    if (s.value("interface", "") == want["interface"] && s.value("group", "") == want["group"] &&
        s.value("port", 0) == want["port"] && s.value("antenna", "") == want["antenna"]) {
      return s;
    }
  }
  m["streams"].push_back(want);
  return m["streams"].back();
}

json& interface_entry(json& m, const std::string& name) {
  for (json& i : m["interfaces"]) {
    if (i.value("name", "") == name) return i;
  }
  m["interfaces"].push_back({{"name", name},
                             {"nic_drops", 0},
                             {"ring_full_drops", 0},
                             {"write_errors", 0},
                             {"rejected", json::object()},
                             {"files", json::array()},
                             {"verbs", nullptr}});
  return m["interfaces"].back();
}

// One writer of the run: its files are name(0), name(1), ...
struct WriterFiles {
  std::string format;
  FileKind kind;
  std::function<std::string(uint64_t)> name;
  json* owner;  // the stream or interface entry whose "files" these are
  std::optional<config::StreamRef> stream;
};

constexpr const char* kUnreadNote = " could not be read at recovery";

// A file of the run: its target (index into Walk::targets) and path relative to it.
using FileKey = std::pair<std::size_t, std::string>;

struct Walk {
  const config::RunConfig& cfg;
  const std::vector<TargetFound>& targets;  // [0]: the output directory of the manifest
  const RecoverOptions& opts;
  bool trust_listed;               // the manifest was final: a listed size is the truth
  std::map<FileKey, json> listed;  // (target, relative path) -> its entry, as found
  RecoveryResult& r;
  capture::codif::SyncSet syncs;
  uint64_t max_seq = 0;
  bool any = false;
  int attempt = 1;
  std::set<FileKey> skipped_before;  // odd files an earlier recovery listed already
  bool several() const { return targets.size() > 1; }
  // How notes name a file: with several targets, which one it is on.
  std::string label(const FileKey& k) const {
    return several() ? "target " + std::to_string(k.first) + ": " + k.second : k.second;
  }
};

// The first frame index and frame count of a file, as the writers list them with several
// targets ("first_index" only where the file's headers say it).
void set_frames(json& e, const FileScan& s) {
  e["frames"] = s.records;
  if (s.first_index) e["first_index"] = *s.first_index;
}

json scan_entry(Walk& w, const WriterFiles& wf, const FileKey& key, uint64_t seq,
                uint64_t record_bytes, bool last_of_writer, FileScan* scan_out) {
  const std::string& rel = key.second;
  const std::string name = w.label(key);
  const fs::path path = w.targets[key.first].directory / rel;
  const auto it = w.listed.find(key);
  const bool listed = it != w.listed.end();
  const uint64_t size = fs::file_size(path);
  json e = listed ? it->second : json{{"path", rel}, {"format", wf.format}};
  e["seq"] = seq;
  if (w.several()) e["target"] = key.first;
  // Its target could not be read at an earlier recovery; it can now: checked like a new file.
  const bool was_unread =
      listed && e.contains("recovered") && e["recovered"].contains("note") &&
      e["recovered"]["note"].is_string() &&
      e["recovered"]["note"].get<std::string>().find(kUnreadNote) != std::string::npos;
  if (was_unread) {
    e.erase("recovered");
    w.r.needed = true;
    w.r.notes.push_back(name + ": its target can be read again; checked");
  }
  if (!e.contains("attempt")) e["attempt"] = w.attempt;
  const uint64_t listed_bytes = listed ? e.value("bytes", uint64_t{0}) : 0;
  if (listed) w.listed.erase(it);
  ScanOptions so;
  so.syncs = w.syncs;
  so.vdif_rate = {w.cfg.streams.frames_per_second, w.cfg.streams.sample_rate};
  so.record_bytes = record_bytes;
  // A file listed with its size on disk is complete when the manifest is final, or when it is
  // not its writer's last file (closed before the snapshot). Only the file a writer had open
  // can end mid-record: reading every header of a long run's files would delay the restart.
  if (listed && !was_unread && listed_bytes == size && (w.trust_listed || !last_of_writer)) {
    e["bytes"] = size;
    if (w.trust_listed) return e;
    if (auto q = quick_scan(path, wf.kind, so)) {
      if (scan_out != nullptr) *scan_out = *q;
      e["records"] = q->records;
      if (w.several()) set_frames(e, *q);
      return e;
    }
    if (wf.kind == FileKind::pcap || wf.kind == FileKind::raw_data) return e;
  }
  so.trim = w.opts.apply;
  const FileScan s = scan_file(path, wf.kind, so);
  if (scan_out != nullptr) *scan_out = s;
  e["bytes"] = s.bytes_whole;
  e["records"] = s.records;
  if (w.several()) set_frames(e, s);
  if (s.records == 0) {
    // removed by the caller (one note there)
  } else if (!listed) {
    ++w.r.unlisted;
    w.r.notes.push_back(name + ": not in the manifest; added (" + std::to_string(s.records) +
                        " whole records)");
  } else if (listed_bytes != s.bytes_whole) {
    w.r.notes.push_back(name + ": manifest said " + std::to_string(listed_bytes) + " bytes, " +
                        std::to_string(s.bytes_whole) + " whole");
  }
  if (s.bytes_whole != s.bytes_on_disk) {
    ++w.r.trimmed;
    w.r.trimmed_bytes += s.bytes_on_disk - s.bytes_whole;
    e["recovered"] = {{"bytes_on_disk", s.bytes_on_disk},
                      {"trimmed_bytes", s.bytes_on_disk - s.bytes_whole},
                      {"why", s.stop}};
    w.r.notes.push_back(name + ": " + (w.opts.apply ? "cut" : "would cut") + " from " +
                        std::to_string(s.bytes_on_disk) + " to " + std::to_string(s.bytes_whole) +
                        " bytes: " + s.stop);
  } else if (!s.checked) {
    e["recovered"] = {
        {"note",
         "headers stripped and no header file (codifhdr, vdifhdr): frame boundaries unknown, "
         "size not checked"}};
  }
  if (listed_bytes != s.bytes_whole || !listed) w.r.needed = true;
  return e;
}

// Whether `rel` is a file of the run on target `t`: on disk (whatever it is: a dangling
// symlink too, which is skipped later), or, where the target's run directory cannot be read,
// listed in the manifest there.
bool file_exists(const Walk& w, std::size_t t, const std::string& rel) {
  if (!w.targets[t].problem.empty()) return w.listed.count({t, rel}) != 0;
  std::error_code ec;
  return fs::exists(fs::symlink_status(w.targets[t].directory / rel, ec));
}

// What is at `p` when it is not a regular file ("symlink", "FIFO"...); empty for a regular file
// (or one gone meanwhile: its scan says so).
std::string odd_type(const fs::path& p) {
  std::error_code ec;
  switch (fs::symlink_status(p, ec).type()) {
    case fs::file_type::symlink:
      return "symlink";
    case fs::file_type::directory:
      return "directory";
    case fs::file_type::fifo:
      return "FIFO";
    case fs::file_type::socket:
      return "socket";
    case fs::file_type::block:
      return "block device";
    case fs::file_type::character:
      return "character device";
    case fs::file_type::unknown:
      return "file of unknown type";
    default:
      return {};
  }
}

// An odd file at a name of the run: not the run's (rocecapd makes regular files only), so never
// read (a FIFO would block), cut or followed (a symlink may lead outside the run); reported
// and listed, and its number stays in use so that no later file is opened at that name. New
// to the manifest (or listed there as a file of the run), it makes the recovery needed.
void skip_odd(Walk& w, const WriterFiles& wf, const FileKey& key, uint64_t seq, std::string type) {
  w.max_seq = std::max(w.max_seq, seq);
  uint64_t& next = w.r.next_seq[wf.name(0)];
  next = std::max(next, seq + 1);
  const bool was_listed = w.listed.erase(key) != 0;
  if (was_listed) {
    w.r.notes.push_back(w.label(key) + ": listed as a file of the run, now a " + type +
                        ": dropped from the list");
  }
  if (was_listed || w.skipped_before.count(key) == 0) w.r.needed = true;
  w.r.skipped.push_back({key.first, key.second, std::move(type)});
}

// A listed file on a target that cannot be read: kept as the manifest had it, unchecked (its
// number stays in use; verify will say whether it is there).
json keep_unread(Walk& w, const FileKey& key, uint64_t seq) {
  const auto it = w.listed.find(key);
  json e = it->second;
  w.listed.erase(it);
  e["seq"] = seq;
  if (!e.contains("attempt")) e["attempt"] = w.attempt;
  e["recovered"] = {{"note", "target " + std::to_string(key.first) + kUnreadNote + " (" +
                                 w.targets[key.first].problem + "): kept as listed, unchecked"}};
  w.r.notes.push_back(w.label(key) + ": its target could not be read; kept as listed");
  return e;
}

// Sequence number `seq` of this writer is in use: the next attempt's files follow it.
void note_in_use(Walk& w, const WriterFiles& wf, uint64_t seq) {
  w.max_seq = std::max(w.max_seq, seq);
  uint64_t& next = w.r.next_seq[wf.name(0)];
  next = std::max(next, seq + 1);
  w.any = true;
}

// Walks one writer's sequence numbers on every target (a number is missing only when it is on
// none); returns its files' entries in order and the scans.
json walk_writer(Walk& w, const WriterFiles& wf, uint64_t record_bytes,
                 std::vector<FileScan>& scans) {
  json files = json::array();
  std::vector<std::pair<uint64_t, std::size_t>> found;  // (seq, target)
  std::error_code ec;
  for (uint64_t seq = 0, misses = 0; misses < kSeqMissesAllowed; ++seq) {
    ++misses;
    const std::string rel = wf.name(seq);
    for (std::size_t t = 0; t < w.targets.size(); ++t) {
      if (!file_exists(w, t, rel)) continue;
      found.emplace_back(seq, t);
      misses = 0;
    }
  }
  for (std::size_t i = 0; i < found.size(); ++i) {
    const auto [seq, t] = found[i];
    const FileKey key{t, wf.name(seq)};
    if (w.targets[t].problem.empty()) {
      if (std::string type = odd_type(w.targets[t].directory / key.second); !type.empty()) {
        skip_odd(w, wf, key, seq, std::move(type));
        continue;
      }
    }
    ++w.r.files;
    ++w.r.targets[t].files;
    if (!w.targets[t].problem.empty()) {
      note_in_use(w, wf, seq);
      files.push_back(keep_unread(w, key, seq));
      continue;
    }
    FileScan scan;
    json e = scan_entry(w, wf, key, seq, record_bytes, i + 1 == found.size(), &scan);
    if (e.value("records", uint64_t{1}) == 0 && e.contains("records")) {
      ++w.r.removed;
      w.r.notes.push_back(w.label(key) + ": no whole record; " +
                          (w.opts.apply ? "removed" : "would remove"));
      w.r.needed = true;
      // Removed, its number is free again; kept (dry run, or not removable), it stays in use.
      if (w.opts.apply && fs::remove(w.targets[t].directory / key.second, ec)) {
        --w.r.targets[t].files;
        continue;
      }
    }
    note_in_use(w, wf, seq);
    if (e.value("records", uint64_t{1}) == 0 && e.contains("records")) continue;
    scans.push_back(scan);
    files.push_back(std::move(e));
  }
  return files;
}

json frame_json(uint64_t index, int64_t ns) {
  return {{"index", index}, {"time", iso8601_utc(ns)}, {"unix_ns", ns}};
}

// A stream's last frame as the files hold it, when they say more than the snapshot.
void stream_from_files(json& s, const std::vector<FileScan>& scans, const char* format) {
  uint64_t frames = 0;
  std::optional<uint64_t> last;
  int64_t last_ns = 0;
  for (const FileScan& f : scans) {
    frames += f.records;
    if (f.last_index && (!last || *f.last_index > *last)) {
      last = f.last_index;
      last_ns = f.last_unix_ns;
    }
  }
  s["recovered"] = {{"frames_in_files", frames}, {"counted_from", format}};
  if (!last) return;
  s["recovered"]["last_frame_in_files"] = frame_json(*last, last_ns);
  const json& snap = s["last_frame"];
  if (snap.is_null() || snap.value("index", uint64_t{0}) < *last) {
    s["last_frame"] = frame_json(*last, last_ns);
  }
}

std::vector<WriterFiles> writers_of(const config::RunConfig& cfg, json& m) {
  using config::OutputFormat;
  // Every entry first: adding one may move the others, whose addresses are kept below.
  for (const config::StreamRef& ref : config::enumerate_streams(cfg))
    (void)stream_entry(m, cfg, ref);
  if (config::has_format(cfg.output, OutputFormat::pcap)) {
    for (const auto& ic : cfg.capture.interfaces)
      (void)interface_entry(m, ic.name);
  }
  std::vector<WriterFiles> out;
  const bool udp = cfg.streams.format == config::StreamFormat::udp;
  const bool vdif = cfg.streams.format == config::StreamFormat::vdif;
  const bool stripped = cfg.output.strip_headers || udp;
  // The headers-only format of the stream format (CODIF's codifhdr, VDIF's vdifhdr).
  const OutputFormat hdr = vdif ? OutputFormat::vdifhdr : OutputFormat::codifhdr;
  for (const config::StreamRef& ref : config::enumerate_streams(cfg)) {
    json& s = stream_entry(m, cfg, ref);
    // Headers first: they give the frame size of header-stripped raw files.
    if (config::has_format(cfg.output, hdr)) {
      out.push_back(
          {vdif ? "vdifhdr" : "codifhdr", vdif ? FileKind::vdifhdr : FileKind::codifhdr,
           [&cfg, ref, hdr](uint64_t q) { return config::stream_file_name(cfg, ref, hdr, q); }, &s,
           ref});
    }
    if (config::has_format(cfg.output, OutputFormat::raw)) {
      const FileKind framed = vdif ? FileKind::raw_vdif : FileKind::raw_codif;
      out.push_back({"raw", stripped ? FileKind::raw_data : framed,
                     [&cfg, ref](uint64_t q) {
                       return config::stream_file_name(cfg, ref, OutputFormat::raw, q);
                     },
                     &s, ref});
    }
  }
  if (config::has_format(cfg.output, OutputFormat::pcap)) {
    for (std::size_t i = 0; i < cfg.capture.interfaces.size(); ++i) {
      json& ie = interface_entry(m, cfg.capture.interfaces[i].name);
      out.push_back({"pcap", FileKind::pcap,
                     [&cfg, i](uint64_t q) { return config::pcap_file_name(cfg, i, q); }, &ie,
                     std::nullopt});
    }
  }
  return out;
}

void collect_listed(const json& m, std::map<FileKey, json>& listed) {
  for (const char* section : {"streams", "interfaces"}) {
    if (!m.contains(section)) continue;
    for (const json& owner : m[section]) {
      for (const json& f : owner.value("files", json::array())) {
        const json t = f.value("target", json(0));
        listed[{t.is_number_integer() && t.get<int64_t>() > 0 ? t.get<std::size_t>() : 0,
                f.value("path", "")}] = f;
      }
    }
  }
}

// Why the marker at `path` does not make its directory target `t` (`dir`) of `run`; empty: it
// does. Without a marker the directory is not known to be this run's (another run of the same
// name, a disk mounted at the wrong place, files copied there by hand): recovery cuts and
// removes files, so it touches only what rocecapd itself marked (issue 23, item 11). rocecapd
// writes the marker before any file of the target, so a target it wrote to always has one.
// The marker names its own directory as one of the run's targets; a restart may list the
// targets in another order, so the directory, not the index alone, is what must agree.
std::string marker_problem(const fs::path& path, const std::string& run, const fs::path& dir,
                           std::size_t t) {
  std::ifstream in(path);
  if (!in) return path.string() + " is missing: not known to be this run's target (not touched)";
  try {
    const json marker = json::parse(in);
    const std::string named = marker.value("run", std::string());
    if (named != run) return path.string() + " names run \"" + named + "\", not \"" + run + "\"";
    const json index = marker.value("target", json(nullptr));
    const json dirs = marker.value("targets", json(nullptr));
    if (!index.is_number_unsigned()) return path.string() + " names no target index";
    const std::size_t i = index.get<std::size_t>();
    if (!dirs.is_array() || i >= dirs.size() || !dirs[i].is_string()) {
      if (i == t) return {};  // no list of directories to compare with
      return path.string() + " names target " + std::to_string(i) + ", not target " +
             std::to_string(t);
    }
    const fs::path named_dir = fs::path(dirs[i].get<std::string>()) / "";
    if (named_dir.lexically_normal() != (dir / "").lexically_normal()) {
      return path.string() + " names target " + std::to_string(i) + " (" +
             dirs[i].get<std::string>() + "), not " + dir.string();
    }
  } catch (const json::exception& e) {
    return path.string() + " does not parse: " + e.what();
  }
  return {};
}

// Why the run directory on target `t` cannot be read for recovery; empty: it can. Target 0
// holds the manifest (read already); every other one names the run in its marker.
std::string target_problem(const fs::path& dir, const std::string& run, std::size_t t) {
  if (t == 0) return {};
  const fs::path run_dir = dir / run;
  std::error_code ec;
  const fs::file_status st = fs::status(run_dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    return run_dir.string() + ": " + ec.message();
  if (!fs::is_directory(st)) return run_dir.string() + ": no run directory there";
  fs::directory_iterator it(run_dir, ec);  // readable (EACCES, EIO)
  if (ec) return run_dir.string() + ": " + ec.message();
  return marker_problem(run_dir / kTargetMarkerName, run, dir, t);
}

// The manifest's "targets", one per target at least (a snapshot written before the targets
// were listed has none): verify reads each file from its target's directory.
void list_targets(json& m, const std::vector<TargetFound>& targets) {
  if (targets.size() < 2) return;
  if (!m.contains("targets") || !m["targets"].is_array()) m["targets"] = json::array();
  json& list = m["targets"];
  for (std::size_t t = list.size(); t < targets.size(); ++t) {
    list.push_back({{"directory", targets[t].directory.string()},
                    {"state", "unknown"},
                    {"bytes_written", 0},
                    {"files", 0},
                    {"free_bytes", 0},
                    {"out_of_rotation", 0},
                    {"reason", nullptr}});
  }
}

json targets_found_json(const std::vector<TargetFound>& targets) {
  json out = json::array();
  for (std::size_t t = 0; t < targets.size(); ++t) {
    out.push_back(
        {{"target", t},
         {"directory", targets[t].directory.string()},
         {"files", targets[t].files},
         {"problem", targets[t].problem.empty() ? json(nullptr) : json(targets[t].problem)}});
  }
  return out;
}

// The manifest lists at most this many notes (a run of many streams has many files).
constexpr std::size_t kMaxNotes = 256;

json capped(const std::vector<std::string>& notes) {
  if (notes.size() <= kMaxNotes) return notes;
  json out(std::vector<std::string>(notes.begin(), notes.begin() + kMaxNotes));
  out.push_back("... and " + std::to_string(notes.size() - kMaxNotes) + " more");
  return out;
}

std::string mtime_iso(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return {};
  return iso8601_utc(int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec);
}

void walk_all(Walk& w, json& m) {
  std::vector<WriterFiles> writers = writers_of(w.cfg, m);
  // Fresh file lists, rebuilt writer by writer (a stream's raw and codifhdr files share one).
  for (WriterFiles& wf : writers)
    (*wf.owner)["files"] = json::array();
  // Per stream, from its header files: data bytes per frame of header-stripped raw files.
  std::map<json*, uint64_t> data_bytes;
  for (WriterFiles& wf : writers) {
    std::vector<FileScan> scans;
    uint64_t record_bytes = 0;
    if (wf.kind == FileKind::raw_data && data_bytes.count(wf.owner) != 0) {
      record_bytes = data_bytes[wf.owner];
      if (w.cfg.streams.format == config::StreamFormat::udp) record_bytes = 0;
    }
    json files = walk_writer(w, wf, record_bytes, scans);
    json& dst = (*wf.owner)["files"];
    for (json& f : files)
      dst.push_back(std::move(f));
    const bool headers = wf.kind == FileKind::codifhdr || wf.kind == FileKind::vdifhdr;
    if (headers && !scans.empty() && scans.front().frame_bytes != 0) {
      data_bytes[wf.owner] = scans.front().frame_bytes - scans.front().header_bytes;
    }
    const bool counts = wf.kind == FileKind::raw_codif || wf.kind == FileKind::raw_vdif ||
                        (headers && !config::has_format(w.cfg.output, config::OutputFormat::raw)) ||
                        (wf.kind == FileKind::raw_data && data_bytes.count(wf.owner) == 0);
    if (wf.stream && counts && !scans.empty() && !w.trust_listed) {
      stream_from_files(*wf.owner, scans, wf.format.c_str());
    }
  }
  for (const auto& [key, entry] : w.listed) {
    ++w.r.missing;
    w.r.needed = true;
    w.r.notes.push_back(w.label(key) +
                        ": listed in the manifest, not found under the run's name "
                        "templates; dropped from the list");
  }
}

// What recovery did and could not do, for the manifest's "recovery" (with several targets,
// what it found on each).
json recovery_fields(const RecoveryResult& r, const RecoverOptions& opts,
                     const std::string& counters_as_of) {
  return {{"at", iso8601_utc(unix_now_ns())},
          {"by", opts.by},
          {"reason", r.reason},
          {"previous_state", r.previous_state.empty() ? json(nullptr) : json(r.previous_state)},
          {"files", r.files},
          {"files_trimmed", r.trimmed},
          {"bytes_trimmed", r.trimmed_bytes},
          {"files_added", r.unlisted},
          {"files_removed", r.removed},
          {"files_missing", r.missing},
          {"notes", capped(r.notes)},
          {"recomputed",
           "from the files: every file's size and whole records (frames, headers or pcap records), "
           "per stream frames_in_files and last_frame (when the files hold later frames than the "
           "snapshot)"},
          {"not_recomputed",
           "stream and interface counters (packets, bytes, lost, duplicate, late, invalid, "
           "gaps, drops, rejected) are the killed process's last periodic snapshot" +
               (counters_as_of.empty() ? std::string() : ", written " + counters_as_of) +
               "; frames received after it are in the files but not in those counters"}};
}

json skipped_json(const RecoveryResult& r) {
  json out = json::array();
  for (const SkippedFile& f : r.skipped) {
    json e = {{"path", f.path}, {"type", f.type}};
    if (r.targets.size() > 1) e["target"] = f.target;
    out.push_back(std::move(e));
  }
  return out;
}

// The odd files earlier recoveries of this run listed (this manifest's, every attempt's).
std::set<FileKey> skipped_before(const json& m) {
  std::set<FileKey> out;
  auto add = [&out](const json& recovery) {
    if (!recovery.is_object() || !recovery.contains("skipped")) return;
    for (const json& f : recovery["skipped"]) {
      if (f.is_object()) out.insert({f.value("target", std::size_t{0}), f.value("path", "")});
    }
  };
  if (m.contains("recovery")) add(m["recovery"]);
  if (m.contains("attempts") && m["attempts"].is_array()) {
    for (const json& a : m["attempts"]) {
      if (a.is_object() && a.contains("recovery")) add(a["recovery"]);
    }
  }
  return out;
}

json recovery_section(const RecoveryResult& r, const RecoverOptions& opts,
                      const std::string& counters_as_of) {
  json out = recovery_fields(r, opts, counters_as_of);
  out["files_skipped"] = r.skipped.size();
  out["skipped"] = skipped_json(r);
  if (r.targets.size() > 1) out["targets"] = targets_found_json(r.targets);
  return out;
}

capture::codif::SyncSet sync_words(const config::RunConfig& cfg) {
  if (cfg.streams.sync.empty()) return capture::codif::SyncSet::defaults();
  capture::codif::SyncSet set;
  for (const auto& s : cfg.streams.sync)
    set.add(s.word, s.layout == config::CodifLayout::v1 ? capture::codif::Layout::v1
                                                        : capture::codif::Layout::v3);
  return set;
}

}  // namespace

json read_manifest(const fs::path& run_dir) {
  const fs::path p = run_dir / kManifestName;
  if (const std::string type = odd_type(p); !type.empty()) {
    throw std::runtime_error("manifest " + p.string() + " is a " + type +
                             ", not a regular file: not read (move it away)");
  }
  std::ifstream in(p);
  if (!in) return nullptr;
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error("manifest " + p.string() + " does not parse: " + e.what());
  }
}

config::RunConfig config_from_manifest(const json& manifest) {
  const std::string text =
      manifest.contains("config") ? manifest["config"].value("text", "") : std::string();
  if (text.empty()) throw std::runtime_error("the manifest carries no run file (config.text)");
  config::LoadResult r = config::load_snapshot(text, "manifest config");
  if (!r.ok()) {
    throw std::runtime_error("the manifest's run file does not load: " +
                             config::format_problem(r.problems.front()));
  }
  return std::move(*r.config);
}

std::vector<fs::path> run_targets(const json& manifest, const config::RunConfig& cfg,
                                  const fs::path& output_dir) {
  std::vector<fs::path> dirs;
  const auto listed = manifest.is_object() ? manifest.find("targets") : manifest.end();
  if (manifest.is_object() && listed != manifest.end() && listed->is_array()) {
    for (const json& t : *listed)
      dirs.emplace_back(t.value("directory", ""));
  }
  if (dirs.empty()) {
    for (const std::string& d : cfg.output.directories)
      dirs.emplace_back(d);
  }
  if (dirs.empty()) dirs.emplace_back(output_dir);
  dirs[0] = output_dir;
  return dirs;
}

RecoveryResult recover_run(const config::RunConfig& cfg, const fs::path& output_dir,
                           const fs::path& run_dir, const RecoverOptions& opts) {
  RecoveryResult r;
  json m = base_manifest(cfg, run_dir);
  r.previous_state = m.value("state", "");
  r.attempt = m.value("attempt", 1);
  const bool had_manifest = fs::exists(run_dir / kManifestName);
  std::vector<fs::path> dirs = opts.targets;
  if (dirs.empty()) dirs.push_back(output_dir);
  for (std::size_t t = 0; t < dirs.size(); ++t)
    r.targets.push_back(
        {t == 0 ? output_dir : dirs[t], 0, target_problem(dirs[t], cfg.run.name, t)});
  Walk w{cfg,       r.targets,        opts, final_state(r.previous_state), {}, r, {}, 0, false,
         r.attempt, skipped_before(m)};
  w.syncs = sync_words(cfg);
  collect_listed(m, w.listed);
  if (!final_state(r.previous_state)) r.needed = true;
  walk_all(w, m);
  r.next_seq_any = w.any ? w.max_seq + 1 : 0;
  if (!had_manifest && !w.any) r.needed = false;  // an empty run directory: nothing to say
  if (r.needed) {
    r.reason = !had_manifest                    ? "no manifest"
               : !final_state(r.previous_state) ? "manifest state \"" + r.previous_state + "\""
                                                : "the manifest does not match the files";
  }
  if (!r.needed || !opts.apply) {
    r.manifest = std::move(m);
    return r;
  }
  m["recovery"] = recovery_section(r, opts, mtime_iso(run_dir / kManifestName));
  list_targets(m, r.targets);
  m["state"] = "recovered";
  if (r.previous_state == "running" || r.previous_state == "starting" || r.previous_state.empty()) {
    m["failure"] = "the process ended without stopping the run (killed or crashed); recovered";
  }
  if (const std::string err = write_file_atomically(run_dir / kManifestName, m.dump(2) + "\n");
      !err.empty()) {
    throw std::runtime_error("manifest: " + err);
  }
  r.manifest = std::move(m);
  return r;
}

}  // namespace rocecap::rundir
