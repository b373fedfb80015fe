#include "daemon/lib/consumers/hello.hpp"

#include <charconv>
#include <sstream>

namespace rocecap::daemon {
namespace {

constexpr std::size_t kMaxStreams = 4096;

bool word_ok(const std::string& w, std::size_t max) {
  if (w.empty() || w.size() > max) return false;
  for (char ch : w) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' || ch == '@' ||
                    ch == ':' || ch == '/';
    if (!ok) return false;
  }
  return true;
}

bool number(const std::string& s, uint64_t& out) {
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && p == end && !s.empty();
}

}  // namespace

std::string parse_hello(const std::string& text, Hello& out) {
  std::istringstream in(text);
  std::string word;
  if (!(in >> word) || word != "hello")
    return "malformed: expected 'hello version=1 mode=lossy|hold streams=all|NAME,...'";
  bool version = false, mode = false, streams = false;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos) return "malformed: '" + word.substr(0, 64) + "' is not key=value";
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "version") {
      if (value != "1") return "version " + value.substr(0, 16) + " not spoken here (1 is)";
      version = true;
    } else if (key == "mode") {
      if (value != "lossy" && value != "hold") return "mode must be lossy or hold";
      out.hold = value == "hold";
      mode = true;
    } else if (key == "streams") {
      streams = true;
      out.all = value == "all";
      if (out.all) continue;
      std::istringstream list(value);
      std::string name;
      while (std::getline(list, name, ',')) {
        if (!word_ok(name, 128)) return "malformed stream name '" + name.substr(0, 64) + "'";
        if (out.streams.size() >= kMaxStreams) return "more than 4096 streams named";
        out.streams.push_back(name);
      }
      if (out.streams.empty()) return "streams= names no stream";
    } else if (key == "name") {
      if (!word_ok(value, 32)) return "name must be 1-32 of A-Z a-z 0-9 _ . - @ : /";
      out.name = value;
    }  // other keys: a newer client's options, ignored
  }
  if (!version || !mode || !streams) return "hello needs version=, mode= and streams=";
  return "";
}

bool parse_ack(const std::string& line, Ack& out) {
  std::istringstream in(line);
  std::string w, k, next, read, missed, ack;
  if (!(in >> w >> k >> next >> read >> missed >> ack) || w != "ack") return false;
  uint64_t stream = 0;
  if (!number(k, stream) || stream > UINT32_MAX) return false;
  out.stream = static_cast<uint32_t>(stream);
  return number(next, out.next) && number(read, out.read) && number(missed, out.missed) &&
         number(ack, out.ack);
}

}  // namespace rocecap::daemon
