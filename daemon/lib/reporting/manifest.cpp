#include "daemon/lib/reporting/manifest.hpp"

#include <ctime>

#include "daemon/lib/reporting/atomic_file.hpp"

namespace rocecap::daemon {
namespace {

nlohmann::json frame_time(const std::optional<ManifestFrameTime>& t) {
  if (!t) return nullptr;
  return {{"index", t->index}, {"time", iso8601_utc(t->unix_ns)}, {"unix_ns", t->unix_ns}};
}

nlohmann::json files_json(const std::vector<ManifestFileEntry>& list) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : list) {
    files.push_back({{"path", f.path}, {"format", f.format}, {"bytes", f.bytes}});
    if (f.target) {
      files.back()["target"] = *f.target;
      files.back()["first_index"] = f.first_index;
      files.back()["frames"] = f.frames;
    }
  }
  return files;
}

// Files lost with their output target: where each was, what it held and why it is gone.
nlohmann::json lost_files_json(const std::vector<ManifestFileEntry>& list) {
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : list) {
    files.push_back({{"path", f.path},
                     {"format", f.format},
                     {"bytes", f.bytes},
                     {"target", f.target.value_or(0)},
                     {"first_index", f.first_index},
                     {"frames", f.frames},
                     {"reason", f.lost}});
  }
  return files;
}

nlohmann::json pairs_json(const std::vector<std::pair<uint64_t, uint64_t>>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [first, count] : list)
    out.push_back({first, count});
  return out;
}

// {"raw": {"frames", "fill_frames", "gaps", "gaps_not_listed"}, "codifhdr": {...}}
nlohmann::json write_loss_json(const std::vector<ManifestWriteLoss>& list) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& l : list) {
    out[l.format] = {{"frames", l.frames},
                     {"fill_frames", l.fill_frames},
                     {"gaps", pairs_json(l.gaps)},
                     {"gaps_not_listed", l.gaps_not_listed}};
  }
  return out;
}

nlohmann::json stream_json(const ManifestStream& s) {
  const nlohmann::json files = files_json(s.files);
  nlohmann::json gaps = nlohmann::json::array();
  for (const auto& [first, count] : s.gaps)
    gaps.push_back({first, count});
  return {{"interface", s.interface},
          {"group", s.group},
          {"port", s.port},
          {"antenna", s.antenna},
          {"source", s.source},
          {"packets", s.packets},
          {"bytes", s.bytes},
          {"lost", s.lost},
          {"duplicate", s.duplicate},
          {"late", s.late},
          {"late_dropped", s.late_dropped},
          {"invalid", s.invalid},
          {"resync", s.resync},
          {"fill_frames", s.fill_frames},
          {"write_errors", s.write_errors},
          {"spills", s.spills},
          {"write_error_lost", write_loss_json(s.write_error_lost)},
          {"storage_lost", write_loss_json(s.storage_lost)},
          {"qp_recoveries", s.qp_recoveries},
          {"first_frame", frame_time(s.first_frame)},
          {"last_frame", frame_time(s.last_frame)},
          {"gaps", gaps},
          {"gaps_not_listed", s.gaps_not_listed},
          {"files", files},
          {"lost_files", lost_files_json(s.lost_files)}};
}

nlohmann::json zero_copy_json(const std::optional<ManifestZeroCopy>& z) {
  if (!z) return nullptr;
  return {{"lent_frames", z->lent_frames},
          {"copied_frames", z->copied_frames},
          {"held_block_stalls", z->held_block_stalls}};
}

nlohmann::json verbs_json(const std::optional<ManifestVerbs>& v) {
  if (!v) return nullptr;
  return {{"device", v->device},
          {"time_source", v->time_source},
          {"wc_errors", v->wc_errors},
          {"oversize", v->oversize},
          {"qp_recoveries", v->qp_recoveries},
          {"first_wc_error", v->first_wc_error.empty() ? nlohmann::json(nullptr)
                                                       : nlohmann::json(v->first_wc_error)}};
}

nlohmann::json targets_json(const std::vector<ManifestTarget>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& t : list) {
    out.push_back(
        {{"directory", t.directory},
         {"state", t.state},
         {"bytes_written", t.bytes_written},
         {"files", t.files},
         {"free_bytes", t.free_bytes},
         {"out_of_rotation", t.out_of_rotation},
         {"reason", t.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(t.reason)}});
  }
  return out;
}

}  // namespace

static nlohmann::json manifest_json(const Manifest& m) {
  nlohmann::json streams = nlohmann::json::array();
  nlohmann::json rejected = nlohmann::json::object();
  for (const auto& s : m.streams) {
    streams.push_back(stream_json(s));
    // VDIF: the stream's thread, and the flow's VTP counts on the flow's first stream.
    if (s.thread) streams.back()["thread"] = *s.thread;
    if (s.frequency_mhz) {
      streams.back()["frequency_mhz"] = {{"low", s.frequency_mhz->first},
                                         {"high", s.frequency_mhz->second}};
    }
    if (s.vtp) streams.back()["vtp"] = {{"skipped", s.vtp->first}, {"out_of_order", s.vtp->second}};
  }
  nlohmann::json interfaces = nlohmann::json::array();
  for (const auto& i : m.interfaces) {
    interfaces.push_back({{"name", i.name},
                          {"nic_drops", i.nic_drops},
                          {"ring_full_drops", i.ring_full_drops},
                          {"dump_pinned_drops", i.dump_pinned_drops},
                          {"consumer_pinned_drops", i.consumer_pinned_drops},
                          {"write_errors", i.write_errors},
                          {"write_error_lost", i.write_error_lost},
                          {"spills", i.spills},
                          {"storage_lost", i.storage_lost},
                          {"lost_files", lost_files_json(i.lost_files)},
                          {"rejected", i.rejected},
                          {"files", files_json(i.files)},
                          {"verbs", verbs_json(i.verbs)},
                          {"zero_copy", zero_copy_json(i.zero_copy)}});
    for (const auto& [reason, n] : i.rejected) {
      rejected[reason] = rejected.value(reason, uint64_t{0}) + n;
    }
  }
  nlohmann::json errors = nlohmann::json::array();
  for (const auto& e : m.errors)
    errors.push_back({{"path", e.path}, {"message", e.message}});
  return {{"run", m.run},
          {"state", m.state},
          {"started", m.started},
          {"stopped", m.stopped.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.stopped)},
          {"host", m.host},
          {"version", m.version},
          {"backend", m.backend},
          {"payload_memory", {{"kind", m.payload_memory}, {"reason", m.payload_memory_reason}}},
          {"config", {{"file", m.config_file}, {"text", m.config_text}}},
          {"streams", streams},
          {"interfaces", interfaces},
          {"rejected", rejected},
          {"errors", errors},
          {"errors_not_listed", m.errors_not_listed},
          {"failure", m.failure.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.failure)}};
}

// With several output targets (output.directories) the manifest lists them.
nlohmann::json to_json(const Manifest& m) {
  nlohmann::json out = manifest_json(m);
  if (!m.targets.empty()) out["targets"] = targets_json(m.targets);
  return out;
}

std::string write_manifest(const std::string& path, const Manifest& m) {
  return write_manifest(path, to_json(m));
}

std::string write_manifest(const std::string& path, const nlohmann::json& m) {
  return replace_file_atomically(path, m.dump(2) + "\n");
}

}  // namespace rocecap::daemon
