#include <ostream>

#include "tools/lib/verify.hpp"

namespace rocecap::tools {
namespace {

std::size_t problem_count(const VerifyResult& r) {
  std::size_t n = r.run_problems.size();
  for (const StreamVerdict& s : r.streams)
    n += s.problems.size();
  return n;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts)
    out += (out.empty() ? "" : sep) + p;
  return out;
}

// "1990 packets, 12 lost, ..." from the actual counters that matter to an operator.
std::string counters(const StreamVerdict& s) {
  std::string out;
  for (const char* key : {"packets", "lost", "duplicate", "late", "late_dropped", "invalid"}) {
    if (!s.actual.contains(key)) continue;
    out += (out.empty() ? "" : ", ") + s.actual[key].dump() + " " + key;
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const VerifyResult& r) {
  nlohmann::json streams = nlohmann::json::array();
  for (const StreamVerdict& s : r.streams) {
    streams.push_back({{"stream", s.name},
                       {"ok", s.ok()},
                       {"problems", s.problems},
                       {"checked", s.checked},
                       {"expected", s.expected},
                       {"actual", s.actual}});
  }
  return {{"ok", r.ok()},
          {"partial", r.partial},
          {"manifest", r.manifest},
          {"summary", r.summary},
          {"problems", problem_count(r)},
          {"streams", streams},
          {"run", {{"problems", r.run_problems}, {"checked", r.run_checked}}}};
}

void print_report(const VerifyResult& r, std::ostream& out) {
  for (const StreamVerdict& s : r.streams) {
    if (s.ok()) {
      const std::string c = counters(s);
      out << "OK    " << s.name << ": " << c;
      if (!s.checked.empty()) out << (c.empty() ? "" : "; ") << join(s.checked, "; ");
      out << "\n";
    } else {
      out << "FAIL  " << s.name << ": " << join(s.problems, "; ") << "\n";
    }
  }
  if (r.run_problems.empty()) {
    out << "OK    run: " << join(r.run_checked, "; ") << "\n";
  } else {
    out << "FAIL  run: " << join(r.run_problems, "; ") << "\n";
  }
  if (r.ok() && r.partial) {
    out << "verify: OK (partial run), " << r.streams.size()
        << " streams: the files hold the generator's frames; what was not captured is above\n";
  } else if (r.ok()) {
    out << "verify: OK, " << r.streams.size() << " streams match the generator's summary\n";
  } else {
    out << "verify: " << problem_count(r) << " problems\n";
  }
}

}  // namespace rocecap::tools
