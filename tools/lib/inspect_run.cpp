#include "tools/lib/inspect_run.hpp"

#include <fstream>
#include <stdexcept>

#include "config/loader.hpp"

namespace rocecap::tools {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_manifest(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error(p.string() + ": cannot be read");
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw std::runtime_error(p.string() + ": does not parse: " + e.what());
  }
}

// A VDIF run's frame rate from its run file (VDIF headers do not carry it); 0: not VDIF, or
// the run file gives the sample rate only (then --vdif is needed).
struct RawKind {
  bool vdif = false;
  uint64_t frames_per_second = 0;
  bool vtp = false;       // VDIF: each datagram (so each pcap record) starts with a VTP number
  bool stripped = false;  // strip_headers or format udp: data only, nothing to inspect
};

RawKind raw_kind(const json& m) {
  RawKind k;
  const std::string text = m.contains("config") ? m["config"].value("text", "") : "";
  if (text.empty()) return k;
  const config::LoadResult r = config::load_snapshot(text, "manifest config");
  if (!r.ok()) return k;
  k.vdif = r.config->streams.format == config::StreamFormat::vdif;
  k.frames_per_second = r.config->streams.frames_per_second;
  k.vtp = r.config->streams.vtp;
  k.stripped =
      r.config->output.strip_headers || r.config->streams.format == config::StreamFormat::udp;
  return k;
}

// Where a listed file is: relative to its target's directory with several targets, else to
// the output directory (the run directory's parent).
fs::path file_path(const json& f, const json& targets, const fs::path& root) {
  const fs::path rel = f.value("path", "");
  const auto t = f.find("target");
  if (t != f.end() && t->is_number_unsigned() && targets.is_array() && *t < targets.size()) {
    return fs::path(targets.at(t->get<std::size_t>()).value("directory", "")) / rel;
  }
  return root / rel;
}

}  // namespace

bool is_run_path(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) || path.filename() == "manifest.json";
}

RunInspectReport inspect_run(const fs::path& run_or_manifest, uint64_t vdif_frames_per_second,
                             bool vtp) {
  std::error_code ec;
  const fs::path manifest_path =
      fs::is_directory(run_or_manifest, ec) ? run_or_manifest / "manifest.json" : run_or_manifest;
  const json m = read_manifest(manifest_path);
  RunInspectReport out;
  out.run = m.value("run", "");
  out.manifest = manifest_path.string();
  const json targets = m.value("targets", json::array());
  out.targets = std::max<uint64_t>(1, targets.size());
  const fs::path root = fs::absolute(manifest_path).lexically_normal().parent_path().parent_path();
  const RawKind kind = raw_kind(m);
  const uint64_t fps = vdif_frames_per_second != 0 ? vdif_frames_per_second
                       : kind.vdif                 ? kind.frames_per_second
                                                   : 0;
  if (kind.vdif && fps == 0) {
    throw std::runtime_error(out.manifest +
                             ": a VDIF run whose run file gives no frames_per_second: give "
                             "--vdif FPS");
  }
  // One report per manifest stream (its raw files) and per interface (its pcap files): the
  // generator and many stations give every stream the same CODIF ids, so streams are told
  // apart by the manifest, not by the headers.
  for (const char* section : {"streams", "interfaces"}) {
    const bool streams = std::string(section) == "streams";
    for (const json& owner : m.value(section, json::array())) {
      RunInspectPart part;
      part.format = streams ? "raw" : "pcap";
      part.owner = streams
                       ? owner.value("group", "") + ":" + std::to_string(owner.value("port", 0)) +
                             " " + owner.value("antenna", "")
                       : "interface " + owner.value("name", "");
      InspectAccumulator acc(out.run + " " + part.owner);
      for (const json& f : owner.value("files", json::array())) {
        const std::string format = f.value("format", "");
        const std::string path = file_path(f, targets, root).string();
        if (format != part.format) {
          out.skipped.push_back(path + ": " + format + " (headers only)");
          continue;
        }
        if (streams && kind.stripped) {
          out.skipped.push_back(path + ": raw without headers (strip_headers or udp)");
          continue;
        }
        try {
          // A VDIF run's pcap records are VDIF datagrams too (raw files hold no VTP numbers).
          acc.add_file(path, fps, !streams && (vtp || kind.vtp));
          part.files.push_back(path);
        } catch (const std::exception& e) {
          out.unreadable.push_back(e.what());
        }
      }
      if (part.files.empty()) continue;
      part.report = acc.finish();
      out.parts.push_back(std::move(part));
    }
  }
  return out;
}

json to_json(const RunInspectReport& r) {
  json parts = json::array();
  for (const RunInspectPart& p : r.parts) {
    json j = to_json(p.report);
    j["owner"] = p.owner;
    j["files"] = p.files;
    j["file_format"] = p.format;
    parts.push_back(std::move(j));
  }
  return {{"run", r.run},   {"manifest", r.manifest}, {"targets", r.targets},
          {"parts", parts}, {"skipped", r.skipped},   {"unreadable", r.unreadable}};
}

void print_table(const RunInspectReport& r, std::ostream& out) {
  out << "run " << r.run << " (" << r.manifest << "), files on " << r.targets
      << (r.targets == 1 ? " target" : " targets") << "\n";
  for (const std::string& u : r.unreadable)
    out << "UNREADABLE " << u << "\n";
  if (!r.skipped.empty())
    out << r.skipped.size() << " files not inspected (headers only or data only)\n";
  for (const RunInspectPart& p : r.parts) {
    out << "\n"
        << p.owner << ": " << p.files.size() << " " << p.format << " files in manifest order\n";
    print_table(p.report, out);
  }
}

}  // namespace rocecap::tools
