#include "tools/lib/verify.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>

#include "capture/net/packet.hpp"
#include "tools/lib/gen_frame.hpp"
#include "tools/lib/gen_summary.hpp"
#include "tools/lib/verify_counts.hpp"
#include "tools/lib/verify_files.hpp"
#include "tools/lib/verify_inputs.hpp"
#include "tools/lib/verify_model.hpp"
#include "tools/lib/verify_partial.hpp"
#include "tools/lib/verify_pcap.hpp"
#include "tools/lib/verify_run_settings.hpp"
#include "tools/lib/verify_vdif.hpp"

namespace rocecap::tools {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using StreamKey = std::tuple<std::string, uint16_t, std::string>;  // group, port, source

// One stream of the manifest with everything needed to judge it.
struct Judged {
  json m;  // the manifest's entry
  GenStream gen;
  bool generated = false;
  StreamExpectation expect;
  uint64_t pcap_records = 0;
  StreamVerdict verdict;
};

std::string stream_name(const json& m) {
  return m.at("interface").get<std::string>() + " " + m.at("group").get<std::string>() + ":" +
         std::to_string(m.at("port").get<uint16_t>()) + " " + m.at("antenna").get<std::string>() +
         " (" + m.at("source").get<std::string>() + ")";
}

std::optional<uint64_t> frame_index(const json& t) {
  if (t.is_null()) return std::nullopt;
  return t.at("index").get<uint64_t>();
}

void compare_frame(StreamVerdict& v, const char* what, const json& t, bool any, uint64_t index) {
  const std::optional<uint64_t> got = frame_index(t);
  v.expected[what] = any ? json(index) : json(nullptr);
  v.actual[what] = got ? json(*got) : json(nullptr);
  if (got.has_value() != any || (any && *got != index)) {
    v.problems.push_back(std::string(what) + " index " + v.actual[what].dump() + ", expected " +
                         v.expected[what].dump());
  }
}

void compare_gaps(Judged& s) {
  StreamVerdict& v = s.verdict;
  std::vector<std::pair<uint64_t, uint64_t>> listed;
  for (const json& g : s.m.at("gaps"))
    listed.emplace_back(g.at(0).get<uint64_t>(), g.at(1).get<uint64_t>());
  const uint64_t not_listed = s.m.at("gaps_not_listed").get<uint64_t>();
  const auto& want = s.expect.gaps;
  compare_count(v, "gaps", listed.size() + not_listed, want.size());
  for (std::size_t i = 0; i < listed.size() && i < want.size(); ++i) {
    if (listed[i] != want[i]) {
      v.problems.push_back("gap " + std::to_string(i) + " [" + std::to_string(listed[i].first) +
                           ", " + std::to_string(listed[i].second) + "], expected [" +
                           std::to_string(want[i].first) + ", " + std::to_string(want[i].second) +
                           "]");
      return;
    }
  }
}

// Frames and fill frames the manifest counts lost under `reason` (write_error_lost: no target
// had room; storage_lost: files gone with a lost output target), over the stream's formats.
uint64_t counted_lost_frames(const json& stream, const char* reason) {
  uint64_t n = 0;
  const auto w = stream.find(reason);
  if (w == stream.end() || !w->is_object()) return 0;
  for (const auto& [format, l] : w->items())
    n += l.value("frames", uint64_t{0}) + l.value("fill_frames", uint64_t{0});
  return n;
}

uint64_t write_error_frames(const json& stream) {
  return counted_lost_frames(stream, "write_error_lost");
}

// The gaps of one format of a stream counted lost under `reason`, [first index, count].
std::vector<std::pair<uint64_t, uint64_t>> lost_gaps(const json& stream, const char* reason,
                                                     const char* format) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const auto w = stream.find(reason);
  if (w == stream.end() || !w->is_object() || !w->contains(format)) return out;
  for (const json& g : w->at(format).value("gaps", json::array()))
    out.emplace_back(g.at(0).get<uint64_t>(), g.at(1).get<uint64_t>());
  return out;
}

// What a format of a stream holds in no file, counted: write_error and storage_lost gaps in
// index order (a file is frame-contiguous, so the two never overlap).
std::vector<std::pair<uint64_t, uint64_t>> unwritten_gaps(const json& stream, const char* format) {
  auto out = lost_gaps(stream, "write_error_lost", format);
  const auto lost = lost_gaps(stream, "storage_lost", format);
  out.insert(out.end(), lost.begin(), lost.end());
  std::sort(out.begin(), out.end());
  return out;
}

// Raw fill frames counted lost under `reason` (not in the manifest's fill_frames count).
uint64_t raw_fills_lost(const json& stream, const char* reason) {
  const auto w = stream.find(reason);
  if (w == stream.end() || !w->is_object() || !w->contains("raw")) return 0;
  return w->at("raw").value("fill_frames", uint64_t{0});
}

void compare_counts(Judged& s, const FrameBuilder& frames, const RunSettings& run) {
  const StreamExpectation& e = s.expect;
  const json& m = s.m;
  StreamVerdict& v = s.verdict;
  auto get = [&](const char* key) { return m.at(key).get<uint64_t>(); };
  compare_sequencing(v, m, e, frames.frame_bytes());
  // Fill frames a write error kept out of the raw files, or lost with their files on a lost
  // target, are not in the manifest's count.
  const uint64_t fills_unwritten =
      raw_fills_lost(m, "write_error_lost") + raw_fills_lost(m, "storage_lost");
  compare_count(v, "fill_frames", get("fill_frames"),
                run.raw && run.fill_gaps ? e.lost - std::min(e.lost, fills_unwritten) : 0);
  // Frames lost to write errors (no target had room) are counted and listed, not a verdict on
  // the capture: the files are compared with the rest (compare_stream_files).
  if (write_error_frames(m) == 0 && counted_lost_frames(m, "storage_lost") == 0)
    compare_count(v, "write_errors", get("write_errors"), 0);
  compare_frame(v, "first_frame", m.at("first_frame"), e.any, e.first);
  compare_frame(v, "last_frame", m.at("last_frame"), e.any, e.last);
  compare_gaps(s);
}

std::vector<ListedFile> listed_files(const json& files, const char* format, const fs::path& root,
                                     std::vector<std::string>& problems) {
  std::vector<ListedFile> out;
  for (const json& f : files) {
    if (f.at("format").get<std::string>() != format) continue;
    ListedFile lf{f.at("path").get<std::string>(), root / f.at("path").get<std::string>()};
    std::error_code ec;
    const uintmax_t size = fs::file_size(lf.path, ec);
    const uint64_t listed = f.at("bytes").get<uint64_t>();
    if (ec) {
      problems.push_back(lf.name + ": " + ec.message());
    } else if (size != listed) {
      problems.push_back(lf.name + ": " + std::to_string(size) + " bytes on disk, manifest says " +
                         std::to_string(listed));
    }
    out.push_back(std::move(lf));
  }
  return out;
}

// The per-stream file formats: whether the run writes them, and what their frames hold.
struct StreamFileKind {
  const char* format;
  bool enabled, headers, data;
};

std::array<StreamFileKind, 2> file_kinds(const RunSettings& run) {
  return {{{"raw", run.raw, !run.strip_headers, true}, {"codifhdr", run.codifhdr, true, false}}};
}

void note_unwritten(StreamVerdict& v, const json& stream, const char* format, const char* reason,
                    const char* why) {
  uint64_t lost = 0;
  for (const auto& g : lost_gaps(stream, reason, format))
    lost += g.second;
  if (lost != 0)
    v.checked.push_back(std::string(format) + ": " + std::to_string(lost) +
                        " frames counted lost to " + why + ", in no file");
}

void compare_stream_files(Judged& s, const FrameBuilder& frames, const RunSettings& run,
                          const fs::path& root) {
  StreamVerdict& v = s.verdict;
  const json& files = s.m.at("files");
  const std::array<StreamFileKind, 2> kinds = file_kinds(run);
  for (const StreamFileKind& k : kinds) {
    std::vector<ListedFile> list = listed_files(files, k.format, root, v.problems);
    if (!k.enabled) {
      if (!list.empty()) v.problems.push_back(std::string(k.format) + " files of a run without it");
      continue;
    }
    SequenceSpec spec{&frames,
                      s.gen.antenna,
                      &s.expect,
                      k.headers,
                      k.data,
                      run.fill_gaps,
                      unwritten_gaps(s.m, k.format),
                      frames.pulse_group(s.gen.group, s.gen.port)};
    note_unwritten(v, s.m, k.format, "write_error_lost", "write errors (write_error gaps)");
    note_unwritten(v, s.m, k.format, "storage_lost", "a lost output target (storage_lost gaps)");
    if (std::string problem = compare_sequence(spec, list); !problem.empty()) {
      v.problems.push_back(std::string(k.format) + ": " + problem);
    } else if (list.empty()) {
      v.checked.push_back(std::string(k.format) + ": no files, none expected");
    } else {
      v.checked.push_back(std::string(k.format) + ": " + std::to_string(list.size()) +
                          (list.size() == 1 ? " file" : " files") + " byte-identical");
    }
  }
}

// A run with a killed attempt: each attempt's window of the stream, byte for byte.
void compare_partial_stream(Judged& s, const FrameBuilder& frames, const RunSettings& run,
                            const fs::path& root) {
  StreamVerdict& v = s.verdict;
  (void)listed_files(s.m.at("files"), "raw", root, v.problems);  // sizes as listed
  (void)listed_files(s.m.at("files"), "codifhdr", root, v.problems);
  const std::array<StreamFileKind, 2> kinds = file_kinds(run);
  for (const StreamFileKind& k : kinds) {
    if (!k.enabled) continue;
    PartialFiles in{&s.m.at("files"), k.format, root,
                    SequenceSpec{&frames,
                                 s.gen.antenna,
                                 &s.expect,
                                 k.headers,
                                 k.data,
                                 run.fill_gaps,
                                 {},
                                 frames.pulse_group(s.gen.group, s.gen.port)}};
    PartialVerdict p = compare_partial(in);
    for (std::string& problem : p.problems)
      v.problems.push_back(std::string(k.format) + ": " + problem);
    if (p.problems.empty()) v.checked.push_back(std::move(p.checked));
  }
  v.checked.push_back("counters not compared: a killed attempt's counters are a snapshot");
}

// Checks each pcap record against the generator's frame and counts it for its stream.
class RecordChecker {
 public:
  RecordChecker(std::vector<Judged>& streams, const FrameBuilder& frames)
      : streams_(streams), frames_(frames), frame_(frames.frame_bytes()) {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const json& m = streams[i].m;
      uint32_t group = 0, source = 0;
      capture::net::parse_ipv4(m.at("group").get<std::string>(), group);
      capture::net::parse_ipv4(m.at("source").get<std::string>(), source);
      index_[{group, m.at("port").get<uint16_t>(), source}] = i;
    }
  }

  std::string operator()(std::span<const std::byte> data, uint32_t wire_bytes) {
    if (data.size() != wire_bytes)
      return "cut short (" + std::to_string(data.size()) + " of " + std::to_string(wire_bytes) +
             " bytes)";
    capture::net::UdpFrame f;
    if (capture::net::parse_udp(data, f) != capture::net::ParseError::ok)
      return "not an IPv4/UDP frame";
    const auto it = index_.find({f.dst_ip, f.dst_port, f.src_ip});
    if (it == index_.end()) return "a datagram of no stream";
    Judged& s = streams_[it->second];
    ++s.pcap_records;
    const auto payload = data.subspan(f.payload_offset, f.payload_bytes);
    capture::codif::Header h;
    capture::codif::Timing t;
    if (!capture::codif::decode(payload, capture::codif::SyncSet::defaults(), h) ||
        capture::codif::validate(h, payload.size(), t) != capture::codif::Invalid::ok) {
      return "not a valid CODIF frame";
    }
    const uint64_t index = capture::codif::absolute_index(h, t);
    const StreamExpectation& e = s.expect;
    if (!e.any || index < e.first || index > e.last || e.slots[index - e.first] == Slot::missing)
      return "frame index " + std::to_string(index) + " of " + s.verdict.name + " not expected";
    const Fate fate = e.slots[index - e.first] == Slot::invalid ? Fate::invalid : Fate::plain;
    const std::size_t n = frames_.build(frames_.pulse_group(s.gen.group, s.gen.port), s.gen.antenna,
                                        index, fate, frame_);
    if (n != payload.size() || std::memcmp(frame_.data(), payload.data(), n) != 0)
      return "frame index " + std::to_string(index) + " of " + s.verdict.name + " differs";
    return {};
  }

 private:
  std::vector<Judged>& streams_;
  const FrameBuilder& frames_;
  std::vector<std::byte> frame_;
  std::map<std::tuple<uint32_t, uint16_t, uint32_t>, std::size_t> index_;
};

std::vector<std::vector<ListedFile>> pcap_files_by_attempt(const json& files,
                                                           const fs::path& root) {
  std::vector<std::vector<ListedFile>> out;
  int attempt = 0;
  for (const json& f : files) {
    if (f.value("format", "") != "pcap") continue;
    if (out.empty() || f.value("attempt", 1) != attempt) out.emplace_back();
    attempt = f.value("attempt", 1);
    out.back().push_back({f.at("path").get<std::string>(), root / f.at("path").get<std::string>()});
  }
  return out;
}

void check_interfaces(const json& manifest, std::vector<Judged>& streams,
                      const FrameBuilder& frames, const RunSettings& run, const fs::path& root,
                      bool partial, VerifyResult& r) {
  RecordChecker checker(streams, frames);
  bool any_pcap_lost = false;
  for (const json& i : manifest.at("interfaces")) {
    const std::string name = i.at("name").get<std::string>();
    // The pinned drops are newer keys: a manifest without them had none.
    for (const char* key :
         {"nic_drops", "ring_full_drops", "dump_pinned_drops", "consumer_pinned_drops"}) {
      if (const uint64_t n = i.value(key, uint64_t{0}); n != 0)
        r.run_problems.push_back("interface " + name + ": " + key + " " + std::to_string(n));
    }
    std::vector<ListedFile> pcaps = listed_files(i.at("files"), "pcap", root, r.run_problems);
    if (!run.pcap) {
      if (!pcaps.empty())
        r.run_problems.push_back("interface " + name + ": pcap files of a run without pcap");
      continue;
    }
    uint64_t expected = 0;
    for (const Judged& s : streams) {
      if (s.m.at("interface").get<std::string>() == name) expected += s.expect.placed();
    }
    // After a restart each attempt's pcap files start again from that attempt's first frame.
    PcapFilesResult p;
    for (const auto& group : partial ? pcap_files_by_attempt(i.at("files"), root)
                                     : std::vector<std::vector<ListedFile>>{pcaps}) {
      const PcapFilesResult g = check_pcap_files(group, std::ref(checker));
      p.records += g.records;
      if (p.problem.empty()) p.problem = g.problem;
    }
    if (!p.problem.empty()) r.run_problems.push_back("interface " + name + " pcap: " + p.problem);
    // pcap records lost to write errors (no target had room) are counted, not in the files.
    for (const auto& [key, why] : {std::pair{"write_error_lost", "write errors"},
                                   std::pair{"storage_lost", "a lost output target"}}) {
      const uint64_t pcap_lost = i.value(key, uint64_t{0});
      if (pcap_lost == 0) continue;
      r.run_checked.push_back("interface " + name + " pcap: " + std::to_string(pcap_lost) +
                              " records counted lost to " + why);
      expected -= std::min(expected, pcap_lost);
      any_pcap_lost = true;
    }
    if (p.records != expected && !partial) {
      r.run_problems.push_back("interface " + name + " pcap: " + std::to_string(p.records) +
                               " records, expected " + std::to_string(expected));
    }
    if (p.problem.empty()) {
      r.run_checked.push_back("interface " + name + " pcap: " + std::to_string(pcaps.size()) +
                              " files, " + std::to_string(p.records) + " records");
    }
  }
  if (!run.pcap || partial || any_pcap_lost) return;
  for (Judged& s : streams)
    compare_count(s.verdict, "pcap_records", s.pcap_records, s.expect.placed());
}

void check_rejected(const json& manifest, const GenSummary& summary, VerifyResult& r) {
  std::map<std::string, uint64_t> want;
  for (const GenStream& g : summary.streams) {
    want["bad_sync"] += g.bad_sync.size();
    want["size_mismatch"] += g.truncated.size();
  }
  for (const GenForeign& f : summary.foreign)
    want["no_stream"] += f.indices.size();
  std::map<std::string, uint64_t> got;
  for (const auto& [reason, n] : manifest.at("rejected").items())
    got[reason] = n.get<uint64_t>();
  std::erase_if(want, [](const auto& kv) { return kv.second == 0; });
  std::erase_if(got, [](const auto& kv) { return kv.second == 0; });
  if (got != want) {
    r.run_problems.push_back("rejected " + json(got).dump() + ", expected " + json(want).dump());
  } else {
    r.run_checked.push_back("rejected " + json(got).dump());
  }
}

void check_run_state(const json& manifest, bool partial, VerifyResult& r) {
  const bool recovered = manifest.at("state") == "recovered";
  if (manifest.at("state") != "stopped" && !recovered)
    r.run_problems.push_back("state " + manifest.at("state").dump() +
                             ", expected \"stopped\" (or \"recovered\")");
  if (partial) {
    for (const json& a : manifest.value("attempts", json::array()))
      r.run_checked.push_back("attempt " + a.value("attempt", json()).dump() + ": " +
                              a.value("state", json()).dump() + " " +
                              a.value("failure", json()).dump());
    if (recovered) r.run_checked.push_back("recovered: " + manifest.at("failure").dump());
  }
  if (!manifest.at("failure").is_null() && !recovered)
    r.run_problems.push_back("failure " + manifest.at("failure").dump());
  // Frames counted lost to write errors (every target full, say) come with the errors that
  // lost them: listed as checked, not as differences; the files are compared with the rest.
  bool counted_losses = false;
  for (const json& st : manifest.at("streams"))
    counted_losses = counted_losses || write_error_frames(st) != 0 ||
                     counted_lost_frames(st, "storage_lost") != 0;
  for (const json& i : manifest.at("interfaces"))
    counted_losses = counted_losses || i.value("write_error_lost", uint64_t{0}) != 0 ||
                     i.value("storage_lost", uint64_t{0}) != 0;
  // A periodic manifest snapshot that could not be written (its target full) lost no frame:
  // the manifest read here was written after it. Said, not a difference.
  json errors = json::array();
  std::size_t snapshots = 0;
  for (const json& e : manifest.at("errors")) {
    const bool snapshot = std::filesystem::path(e.value("path", "")).filename() == "manifest.json";
    snapshots += snapshot ? 1 : 0;
    if (!snapshot) errors.push_back(e);
  }
  if (snapshots != 0)
    r.run_checked.push_back(std::to_string(snapshots) +
                            " manifest snapshot(s) not written, listed in errors (no frame lost)");
  if (counted_losses && !errors.empty()) {
    r.run_checked.push_back(std::to_string(errors.size()) +
                            " write errors listed, their frames counted as write_error_lost or "
                            "storage_lost");
    return;
  }
  for (const json& e : errors)
    r.run_problems.push_back("error " + e.dump());
}

std::vector<Judged> match_streams(const json& manifest, const GenSummary& summary, uint32_t window,
                                  VerifyResult& r) {
  std::map<StreamKey, const GenStream*> gen;
  for (const GenStream& g : summary.streams)
    gen[{g.group, g.port, g.source}] = &g;
  std::vector<Judged> out;
  for (const json& m : manifest.at("streams")) {
    Judged s;
    s.m = m;
    s.verdict.name = stream_name(m);
    const auto it = gen.find({m.at("group").get<std::string>(), m.at("port").get<uint16_t>(),
                              m.at("source").get<std::string>()});
    if (it != gen.end()) {
      s.gen = *it->second;
      s.generated = true;
      gen.erase(it);
    }
    try {
      s.expect = expect_stream(s.gen, window == 0 ? 1 : window);
    } catch (const std::invalid_argument& e) {
      throw VerifyInputError("summary stream " + s.gen.group + " <- " + s.gen.source + ": " +
                             e.what());
    }
    out.push_back(std::move(s));
  }
  for (const auto& [key, g] : gen) {
    r.run_problems.push_back("generated stream " + g->group + ":" + std::to_string(g->port) +
                             " <- " + g->source + " is not in the manifest");
  }
  return out;
}

}  // namespace

bool VerifyResult::ok() const noexcept {
  if (!run_problems.empty()) return false;
  for (const StreamVerdict& s : streams) {
    if (!s.ok()) return false;
  }
  return true;
}

namespace {

// A run over several output targets (output.directories) lists each file relative to its
// target's directory, named by "target" (an index into "targets"): such paths are made absolute
// here, so every later `root / path` is the file itself.
void resolve_targets(json& manifest) {
  const auto targets = manifest.find("targets");
  if (targets == manifest.end() || !targets->is_array()) return;
  auto resolve = [&](json& files) {
    for (json& f : files) {
      const auto t = f.find("target");
      if (t == f.end() || !t->is_number_unsigned() || *t >= targets->size()) continue;
      const fs::path dir = targets->at(t->get<std::size_t>()).value("directory", "");
      f["path"] = (dir / f.at("path").get<std::string>()).string();
    }
  };
  for (json& s : manifest.at("streams"))
    resolve(s.at("files"));
  for (json& i : manifest.at("interfaces"))
    resolve(i.at("files"));
}

}  // namespace

VerifyResult verify_run(const fs::path& manifest_path, const fs::path& summary_path,
                        const VerifyOptions& options) {
  json manifest = read_manifest_json(manifest_path);
  resolve_targets(manifest);
  const GenSummary summary = read_gen_summary(summary_path);
  std::unique_ptr<FrameBuilder> frames;
  try {
    frames = std::make_unique<FrameBuilder>(summary.frame);
    if (summary.pulse) frames->set_pulse(*summary.pulse);
  } catch (const std::exception& e) {
    // The builder speaks in the generator's options: say where they come from here.
    throw VerifyInputError("summary " + summary_path.string() +
                           ": its \"frame\" parameters are not a valid stream (as rocecap gen "
                           "options: " +
                           e.what() + ")");
  }
  VerifyResult r;
  r.manifest = manifest_path.string();
  r.summary = summary_path.string();
  // Files are listed relative to the output directory, the parent of the run directory.
  const fs::path root = fs::absolute(manifest_path).parent_path().parent_path();
  try {
    RunSettings run = settings_from_config_text(manifest.at("config").value("text", ""));
    if (!run.note.empty()) r.run_checked.push_back(run.note);
    if (options.strip_headers) run.strip_headers = *options.strip_headers;
    if (options.reorder_window) run.reorder_window = *options.reorder_window;
    const bool partial = is_partial_run(manifest);
    r.partial = partial;
    check_run_state(manifest, partial, r);
    if (frames->vdif() != nullptr) {  // VDIF runs: verify_vdif.hpp
      verify_vdif_streams(manifest, summary, *frames, run, root, r);
      return r;
    }
    std::vector<Judged> streams = match_streams(manifest, summary, run.reorder_window, r);
    for (Judged& s : streams) {
      if (partial) {
        compare_partial_stream(s, *frames, run, root);
        continue;
      }
      compare_counts(s, *frames, run);
      compare_stream_files(s, *frames, run, root);
    }
    check_interfaces(manifest, streams, *frames, run, root, partial, r);
    if (!partial) check_rejected(manifest, summary, r);
    for (Judged& s : streams)
      r.streams.push_back(std::move(s.verdict));
  } catch (const json::exception& e) {
    throw VerifyInputError("manifest " + manifest_path.string() + ": " + e.what());
  }
  return r;
}

}  // namespace rocecap::tools
