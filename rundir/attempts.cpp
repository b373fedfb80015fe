#include "rundir/attempts.hpp"

#include <filesystem>
#include <string>

namespace rocecap::rundir {
using nlohmann::json;

namespace {

json summary(const json& m, int attempt) {
  json s = {{"attempt", attempt}};
  for (const char* k : {"started", "stopped", "state", "failure", "host", "version", "recovery"}) {
    if (m.contains(k)) s[k] = m[k];
  }
  return s;
}

void tag_files(json& files, int attempt) {
  if (!files.is_array()) return;
  for (json& f : files) {
    if (!f.contains("attempt")) f["attempt"] = attempt;
  }
}

bool same_stream(const json& a, const json& b) {
  for (const char* k : {"interface", "group", "port", "antenna"}) {
    if (a.value(k, json()) != b.value(k, json())) return false;
  }
  return true;
}

// Sums counters, concatenates lists; `cur` wins for everything else.
json add(const json& prev, const json& cur) {
  json out = cur;
  for (auto it = prev.begin(); it != prev.end(); ++it) {
    const std::string& k = it.key();
    const json& p = it.value();
    if (k == "port" || k == "recovered") continue;
    if (!out.contains(k)) {
      out[k] = p;
    } else if (p.is_number_unsigned() && out[k].is_number_unsigned()) {
      out[k] = p.get<uint64_t>() + out[k].get<uint64_t>();
    } else if (p.is_number_integer() && out[k].is_number_integer()) {
      out[k] = p.get<int64_t>() + out[k].get<int64_t>();
    } else if (p.is_array() && out[k].is_array()) {
      json joined = p;
      for (const json& e : out[k])
        joined.push_back(e);
      out[k] = std::move(joined);
    } else if (p.is_object() && out[k].is_object() && k != "first_frame" && k != "last_frame") {
      out[k] = add(p, out[k]);  // rejected, write-error losses, verbs: counters per key
    }
  }
  out.erase("recovered");
  return out;
}

json merge_stream(const json& prev, json cur, int attempt) {
  tag_files(cur["files"], attempt);
  const json& pl = prev.value("last_frame", json());
  const json& cf = cur.value("first_frame", json());
  json gap;
  if (pl.is_object() && cf.is_object()) {
    const uint64_t last = pl.value("index", uint64_t{0}), first = cf.value("index", uint64_t{0});
    if (first > last + 1) gap = json::array({last + 1, first - last - 1});
  }
  json gaps = cur.value("gaps", json::array());
  cur["gaps"] = json::array();
  if (!gap.is_null()) cur["gaps"].push_back(gap);
  for (const json& g : gaps)
    cur["gaps"].push_back(g);
  const uint64_t restart_lost = gap.is_null() ? 0 : gap[1].get<uint64_t>();
  cur["lost"] = cur.value("lost", uint64_t{0}) + restart_lost;
  cur["lost_in_restarts"] = restart_lost;
  json out = add(prev, cur);
  if (!prev.value("first_frame", json()).is_null()) out["first_frame"] = prev["first_frame"];
  if (out.value("last_frame", json()).is_null())
    out["last_frame"] = prev.value("last_frame", json());
  return out;
}

json merge_list(const json& prev, const json& cur, int attempt, bool streams) {
  json out = json::array();
  std::vector<bool> used(prev.is_array() ? prev.size() : 0, false);
  for (const json& c : cur) {
    json merged = c;
    for (std::size_t i = 0; i < used.size(); ++i) {
      const json& p = prev[i];
      const bool match = streams ? same_stream(p, c) : p.value("name", "") == c.value("name", "");
      if (used[i] || !match) continue;
      used[i] = true;
      if (streams) {
        merged = merge_stream(p, c, attempt);
      } else {
        json ci = c;
        tag_files(ci["files"], attempt);
        merged = add(p, ci);
      }
      break;
    }
    if (merged.contains("files")) tag_files(merged["files"], attempt);
    out.push_back(std::move(merged));
  }
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) out.push_back(prev[i]);  // a stream this attempt's run file no longer has
  }
  return out;
}

// "/data/t1/" and "/data/t1" are one directory.
std::string directory_of(const json& target) {
  std::string d = std::filesystem::path(target.value("directory", "")).lexically_normal().string();
  while (d.size() > 1 && d.back() == '/')
    d.pop_back();
  return d;
}

// Earlier attempts' files name their output target by index into the earlier "targets"; a
// restart with other output.directories lists other targets. Each earlier file is pointed at
// its directory's index in this attempt's list, the earlier targets this attempt lacks
// appended, so `rocecap verify` and `rocecap inspect` still find every file. Without a list
// (one directory) a file is on the first target, where the run directory (and manifest) is.
void remap_targets(const json& previous, json& prev_streams, json& prev_ifaces, json& out) {
  const json prev_targets = previous.value("targets", json::array());
  json merged = out.value("targets", json::array());
  if (prev_targets.empty() && merged.empty()) return;
  if (merged.empty()) merged.push_back(prev_targets[0]);
  auto index_of = [&merged](const json& target) {
    const std::string dir = directory_of(target);
    for (std::size_t i = 0; i < merged.size(); ++i) {
      if (directory_of(merged[i]) == dir) return i;
    }
    merged.push_back(target);
    return merged.size() - 1;
  };
  const auto remap = [&](json& files) {
    for (json& f : files) {
      const json t = f.value("target", json(0));
      const std::size_t was =
          t.is_number_integer() && t.get<int64_t>() > 0 ? t.get<std::size_t>() : 0;
      f["target"] = prev_targets.empty()        ? 0
                    : was < prev_targets.size() ? index_of(prev_targets[was])
                                                : was;
    }
  };
  // Files lost with their target (lost_files) name it too.
  for (json* owners : {&prev_streams, &prev_ifaces}) {
    for (json& owner : *owners) {
      for (const char* list : {"files", "lost_files"}) {
        if (owner.contains(list) && owner[list].is_array()) remap(owner[list]);
      }
    }
  }
  if (merged.size() > 1 || out.contains("targets")) out["targets"] = std::move(merged);
}

}  // namespace

int next_attempt(const json& previous) {
  if (previous.is_null()) return 1;
  return previous.value("attempt", 1) + 1;
}

json merge_attempts(const json& previous, const json& current, int attempt) {
  json out = current;
  const int prev_attempt = previous.value("attempt", 1);
  json history = json::array();
  if (previous.contains("attempts") && previous["attempts"].is_array() &&
      !previous["attempts"].empty()) {
    history = previous["attempts"];
    // Its final (or recovered) state; its start stays (the top level's is the run's first).
    for (const char* k : {"stopped", "state", "failure", "recovery"}) {
      if (previous.contains(k)) history.back()[k] = previous[k];
    }
  } else {
    history.push_back(summary(previous, prev_attempt));
  }
  json prev_streams = previous.value("streams", json::array());
  json prev_ifaces = previous.value("interfaces", json::array());
  for (json& s : prev_streams)
    tag_files(s["files"], prev_attempt);
  for (json& i : prev_ifaces)
    tag_files(i["files"], prev_attempt);
  remap_targets(previous, prev_streams, prev_ifaces, out);
  out["streams"] = merge_list(prev_streams, current.value("streams", json::array()), attempt, true);
  out["interfaces"] =
      merge_list(prev_ifaces, current.value("interfaces", json::array()), attempt, false);
  out["rejected"] =
      add(previous.value("rejected", json::object()), current.value("rejected", json::object()));
  json errors = previous.value("errors", json::array());
  for (const json& e : current.value("errors", json::array()))
    errors.push_back(e);
  out["errors"] = std::move(errors);
  out["errors_not_listed"] = previous.value("errors_not_listed", uint64_t{0}) +
                             current.value("errors_not_listed", uint64_t{0});
  if (!history.empty() && history.front().contains("started"))
    out["started"] = history.front()["started"];
  out.erase("recovery");
  history.push_back(summary(current, attempt));
  out["attempt"] = attempt;
  out["attempts"] = std::move(history);
  return out;
}

}  // namespace rocecap::rundir
