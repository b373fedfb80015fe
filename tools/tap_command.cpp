// `rocecap tap`: reads one stream of a running rocecapd through its consumer socket
// (doc/consumers.md) and writes its frames, in time order, fill frames included, to a file or
// stdout: what the raw file of that stream holds, byte for byte, from the moment it attached
// (dada_dbdisk's role for psrdada rings). A consumer in lossy mode: rocecapd never waits for
// it; a frame it missed is counted and named on stderr, and leaves a hole in the output.
// Exit 0: the stream ended (or --frames were written, or --seconds passed idle) with nothing
// missed; 1: an error; 2: the stream named is not one stream; 3: no daemon at the socket; 4:
// frames were missed (or the consumer was detached). Command-line errors: CLI11's codes.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/loader.hpp"
#include "consumer/client/rocecap_consumer.hpp"
#include "tools/command.hpp"

namespace rocecap::tools {
namespace {

struct TapArgs {
  std::string socket, config, stream, out = "-", mode = "lossy", name = "tap", from = "live";
  uint64_t frames = 0;
  double seconds = 0;
  bool quiet = false;
};

std::string socket_of(const TapArgs& a) {
  if (!a.socket.empty()) return a.socket;
  config::HostChecks host;
  host.check_filesystem = false;
  host.check_memory = false;
  host.check_interfaces = false;
  const config::LoadResult r = config::load_file(a.config, host);
  if (!r.ok()) {
    std::string text;
    for (const auto& p : r.problems)
      text += "\n  " + config::format_problem(p);
    throw std::runtime_error(a.config + ": not a valid run file:" + text);
  }
  if (!r.config->consumers.enabled)
    throw std::runtime_error(a.config + ": has no consumers section: nothing to tap");
  return r.config->consumers.socket;
}

bool write_all(int fd, const std::byte* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

struct TapTotals {
  uint64_t frames = 0, fill = 0, missed = 0;
};

int tap(const TapArgs& a, consumer::Client& client, int out, TapTotals& t) {
  consumer::Stream& s = client.streams().front();
  std::vector<std::byte> buf(1 << 16);
  consumer::Frame f;
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  auto last_frame = start;
  for (;;) {
    const consumer::Event e = s.next(f);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report > std::chrono::milliseconds(50)) {
      client.report();
      last_report = now;
    }
    if (e == consumer::Event::ended) return 0;
    last_frame = now;
    if (e == consumer::Event::missed) {
      t.missed += s.last_missed();
      if (!a.quiet)
        std::cerr << "rocecap tap: missed " << s.last_missed() << " frame(s) from index "
                  << f.frame_index << " (overwritten before they were read)\n";
      continue;
    }
    if (e == consumer::Event::none) {
      if (a.seconds > 0 && std::chrono::duration<double>(now - last_frame).count() > a.seconds)
        return 0;
      if (!client.connected() && !client.detach_reason().empty()) return 4;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    if (buf.size() < f.size()) buf.resize(f.size());
    if (!s.copy(f, buf)) {
      ++t.missed;
      if (!a.quiet)
        std::cerr << "rocecap tap: frame " << f.frame_index << " was overwritten while read\n";
      continue;
    }
    if (!write_all(out, buf.data(), f.size())) {
      std::cerr << "rocecap tap: cannot write " << a.out << ": " << std::strerror(errno) << "\n";
      return 1;
    }
    s.done_with(f);
    ++t.frames;
    t.fill += f.fill() ? 1 : 0;
    if (a.frames != 0 && t.frames >= a.frames) return 0;
  }
}

int run_tap(const TapArgs& a) {
  consumer::ConnectOptions o;
  o.streams = {a.stream};
  o.mode = a.mode == "hold" ? consumer::Mode::hold : consumer::Mode::lossy;
  o.start = a.from == "oldest" ? consumer::Start::oldest : consumer::Start::live;
  o.name = a.name;
  std::unique_ptr<consumer::Client> client;
  try {
    o.socket = socket_of(a);
    client = std::make_unique<consumer::Client>(o);
  } catch (const std::exception& e) {
    std::cerr << "rocecap tap: " << e.what() << "\n";
    return std::string(e.what()).find("cannot connect") != std::string::npos ? 3 : 1;
  }
  if (client->streams().size() != 1) {
    std::cerr << "rocecap tap: --stream " << a.stream << " names " << client->streams().size()
              << " streams; name one (<antenna>@<group>:<port>):";
    for (auto& s : client->streams())
      std::cerr << " " << s.info().name;
    std::cerr << "\n";
    return 2;
  }
  if (client->streams().front().info().payload_memory != "host") {
    std::cerr << "rocecap tap: stream " << a.stream
              << " has its payload in GPU memory; tap reads host memory only\n";
    return 1;
  }
  const int out = a.out == "-"
                      ? STDOUT_FILENO
                      : ::open(a.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) {
    std::cerr << "rocecap tap: cannot create " << a.out << ": " << std::strerror(errno) << "\n";
    return 1;
  }
  TapTotals t;
  int rc = tap(a, *client, out, t);
  client->report();
  if (out != STDOUT_FILENO && ::close(out) != 0 && rc == 0) {
    std::cerr << "rocecap tap: cannot write " << a.out << ": " << std::strerror(errno) << "\n";
    rc = 1;
  }
  const consumer::Stream& s = client->streams().front();
  std::cerr << "rocecap tap: " << s.info().name << ": " << t.frames << " frames written (" << t.fill
            << " fill), " << t.missed << " missed";
  if (!client->detach_reason().empty()) std::cerr << "; detached: " << client->detach_reason();
  std::cerr << "\n";
  if (rc == 0 && t.missed > 0) rc = 4;
  return rc;
}

}  // namespace

void add_tap_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<TapArgs>();
  CLI::App* cmd = app.add_subcommand(
      "tap",
      "Read one stream of a running rocecapd (consumers section) and write its frames in time "
      "order, fill frames included, as its raw file holds them");
  auto* where = cmd->add_option_group("daemon", "which daemon");
  where->add_option("--socket", a->socket, "the daemon's consumer socket (consumers.socket)");
  where->add_option("--config", a->config, "the run file: its consumers.socket")
      ->check(CLI::ExistingFile);
  where->require_option(1);
  cmd->add_option("--stream", a->stream, "the stream: <antenna>@<group>:<port>, or an antenna")
      ->required();
  cmd->add_option("-o,--out", a->out, "output file; - (default): stdout");
  cmd->add_option("--frames", a->frames, "stop after this many frames (default: the run's end)");
  cmd->add_option("--seconds", a->seconds,
                  "stop after this many seconds with nothing new to read (default: wait for the "
                  "run's end)");
  cmd->add_option("--from", a->from,
                  "live (default): the frames published from now on; oldest: also those still in "
                  "the stream's log (older ones may be gone: counted missed)")
      ->check(CLI::IsMember({"live", "oldest"}));
  cmd->add_option("--mode", a->mode, "lossy (default: rocecapd never waits) or hold")
      ->check(CLI::IsMember({"lossy", "hold"}));
  cmd->add_option("--name", a->name, "this consumer's name in rocecapd's log and metrics");
  cmd->add_flag("-q,--quiet", a->quiet, "no line per missed frame");
  cmd->footer(
      "Exit codes: 0 the stream ended (or --frames, or --seconds idle) with nothing missed; 1 an "
      "error; 2 --stream is not exactly one stream; 3 no rocecapd at the socket; 4 frames were "
      "missed or rocecapd detached this consumer");
  cmd->callback([a, &action] { action = [a] { return run_tap(*a); }; });
}

}  // namespace rocecap::tools
