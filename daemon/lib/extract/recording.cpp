#include "daemon/lib/extract/recording.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/loader.hpp"
#include "config/units.hpp"
#include "daemon/lib/run/run_assembly.hpp"

namespace rocecap::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_manifest(const fs::path& run_dir) {
  const fs::path path = run_dir / "manifest.json";
  std::ifstream in(path);
  if (!in) {
    throw ExtractError(path.string() +
                       ": cannot be read: give a run directory (<output.directory>/<run.name>)");
  }
  std::stringstream text;
  text << in.rdbuf();
  json m = json::parse(text.str(), nullptr, false);
  if (m.is_discarded() || !m.is_object() || !m.contains("streams") || !m.contains("config")) {
    throw ExtractError(path.string() + ": not a run manifest (no \"streams\" and \"config\")");
  }
  return m;
}

config::RunConfig load_config(const json& m, const fs::path& manifest) {
  const json& c = m.at("config");
  const std::string text = c.value("text", "");
  const std::string name =
      manifest.string() + " (config.text, the run file " + c.value("file", std::string("?")) + ")";
  config::LoadResult r = config::load_snapshot(text, name);
  if (!r.ok()) {
    std::string why;
    for (const auto& p : r.problems)
      why += "\n  " + config::format_problem(p);
    throw ExtractError(name + ": does not load:" + why);
  }
  return std::move(*r.config);
}

std::string stream_key(const std::string& itf, const std::string& group, uint64_t port,
                       const std::string& antenna, int64_t thread) {
  return fmt::format("{}|{}|{}|{}|{}", itf, group, port, antenna, thread);
}

std::string ref_key(const config::RunConfig& c, const config::StreamRef& ref) {
  const auto& itf = c.capture.interfaces[ref.interface];
  const auto& g = itf.groups[ref.group];
  const int64_t thread = c.streams.threads.empty() ? -1 : c.streams.threads[ref.thread];
  return stream_key(itf.name, config::format_ipv4(g.address), g.port,
                    c.streams.antennas[ref.antenna].name, thread);
}

std::string entry_key(const json& s) {
  return stream_key(s.value("interface", ""), s.value("group", ""), s.value("port", uint64_t{0}),
                    s.value("antenna", ""),
                    s.contains("thread") ? s.value("thread", int64_t{-1}) : -1);
}

// Where a listed file is: relative to its target's directory (several targets), else to
// output.directory, which is the run directory's parent (the run directory may have moved).
fs::path resolve(const Recording& r, const json& f) {
  const fs::path rel = f.value("path", "");
  const auto t = f.find("target");
  const auto targets = r.manifest.find("targets");
  if (t != f.end() && t->is_number_unsigned() && targets != r.manifest.end() &&
      targets->is_array() && t->get<std::size_t>() < targets->size()) {
    const fs::path dir = targets->at(t->get<std::size_t>()).value("directory", "");
    if (std::error_code ec; fs::exists(dir / rel, ec)) return dir / rel;
  }
  return r.run_dir.parent_path() / rel;
}

// The manifest's write-error gaps of the raw files and the files lost with their target.
std::vector<MissingRange> missing_ranges(const json& s) {
  std::vector<MissingRange> out;
  const json raw = s.value("write_error_lost", json::object()).value("raw", json::object());
  for (const json& g : raw.value("gaps", json::array())) {
    if (g.is_array() && g.size() == 2) {
      out.push_back({g[0].get<uint64_t>(), g[1].get<uint64_t>(),
                     "not in the recording: lost to a write error (manifest write_error_lost)"});
    }
  }
  for (const json& f : s.value("lost_files", json::array())) {
    if (f.value("format", "") != "raw") continue;
    out.push_back({f.value("first_index", uint64_t{0}), f.value("frames", uint64_t{0}),
                   "not in the recording: its file was lost with its output target (" +
                       f.value("reason", std::string("?")) + ")"});
  }
  return out;
}

}  // namespace

Recording read_recording(const fs::path& run_dir) {
  Recording r;
  r.run_dir = fs::absolute(run_dir).lexically_normal();
  if (r.run_dir.has_filename() == false) r.run_dir = r.run_dir.parent_path();
  r.manifest = read_manifest(r.run_dir);
  r.config = load_config(r.manifest, r.run_dir / "manifest.json");
  const config::StreamsSection& s = r.config.streams;
  if (s.format == config::StreamFormat::udp) {
    throw ExtractError((r.run_dir / "manifest.json").string() +
                       ": streams.format is udp: its raw files hold datagrams without frame "
                       "times, so no window can be cut from them");
  }
  r.format.format = s.format == config::StreamFormat::vdif ? capture::StreamFormat::vdif
                                                           : capture::StreamFormat::codif;
  r.format.syncs = sync_set(s);
  r.format.rate = {s.frames_per_second, s.sample_rate};
  if (r.config.output.strip_headers) {
    throw ExtractError((r.run_dir / "manifest.json").string() +
                       ": output.strip_headers: the raw files hold no headers to find frames by");
  }
  if (!config::has_format(r.config.output, config::OutputFormat::raw)) {
    throw ExtractError((r.run_dir / "manifest.json").string() +
                       ": output.formats has no raw: the run recorded no raw files to cut "
                       "windows from");
  }
  r.refs = config::enumerate_streams(r.config);
  r.entries.assign(r.refs.size(), nullptr);
  for (const json& e : r.manifest.at("streams")) {
    const std::string key = entry_key(e);
    for (std::size_t i = 0; i < r.refs.size(); ++i) {
      if (ref_key(r.config, r.refs[i]) == key) r.entries[i] = &e;
    }
  }
  return r;
}

RecordedStream open_stream(const Recording& r, std::size_t i) {
  RecordedStream out;
  out.ref = r.refs[i];
  out.manifest = r.entries[i];
  if (out.manifest == nullptr) return out;
  out.missing = missing_ranges(*out.manifest);
  for (const json& f : out.manifest->value("files", json::array())) {
    if (f.value("format", "") != "raw") continue;
    const fs::path path = resolve(r, f);
    try {
      FrameFile file(path, r.format);
      if (file.frames() > 0) out.files.push_back(std::move(file));
    } catch (const ExtractError& e) {
      out.problems.push_back(e.what());
    }
  }
  std::sort(out.files.begin(), out.files.end(), [](const FrameFile& a, const FrameFile& b) {
    return a.first().index < b.first().index;
  });
  return out;
}

}  // namespace rocecap::daemon
