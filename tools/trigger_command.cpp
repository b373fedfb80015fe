// `rocecap trigger`: asks a running rocecapd for a triggered dump (doc/dumps.md) through its
// trigger socket, and prints the answer (JSON): per stream the retained frame range, the part
// of the window that is not retained and why, and the files that will be written.
// Exit 0: accepted; 1: refused (the answer says why); 2: usage; 3: no daemon at the socket.
// With --status N it asks how dump N is doing instead and prints its status (state, progress):
// exit 0: found; 1: no such dump (or refused); 3: no daemon.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "config/loader.hpp"
#include "tools/command.hpp"
#include "tools/window_args.hpp"

namespace rocecap::tools {
namespace {

using nlohmann::json;

struct TriggerArgs : WindowArgs {
  std::string socket, config, json_text;
  std::optional<uint64_t> status;  // --status N: ask about dump N
};

// The socket named by --socket, or the one the run file's retention section gives.
std::string socket_path(const TriggerArgs& a) {
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
  if (!r.config->retention.enabled) {
    throw std::runtime_error(a.config +
                             ": has no retention section: this run keeps nothing "
                             "to dump");
  }
  if (!r.config->retention.socket.empty()) return r.config->retention.socket;
  return r.config->output.directory + "/" + r.config->run.name + "/trigger.sock";
}

std::string exchange(const std::string& path, const std::string& request) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof sa.sun_path) throw std::runtime_error(path + ": path too long");
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw std::system_error(errno, std::generic_category(),
                            "cannot reach rocecapd's trigger socket " + path + ": " + why);
  }
  const std::string line = request + "\n";
  for (std::size_t done = 0; done < line.size();) {
    const ssize_t n = ::send(fd, line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

int run_trigger(const TriggerArgs& a) {
  std::string request = a.json_text;
  if (a.status) {
    request = json{{"status", *a.status}}.dump();
  } else if (request.empty()) {
    if (a.start.empty() || a.end.empty()) {
      std::cerr << "rocecap trigger: give --start and --end (or --json)\n";
      return 2;
    }
    request = a.request().dump();
  } else {
    // One line on the socket: a valid document is sent compact, anything else as written
    // (the daemon names what is wrong with it).
    const json j = json::parse(request, nullptr, false);
    if (!j.is_discarded()) request = j.dump();
    for (char& c : request)
      c = c == '\n' ? ' ' : c;
  }
  std::string answer;
  try {
    answer = exchange(socket_path(a), request);
  } catch (const std::system_error& e) {
    std::cerr << "rocecap trigger: " << e.what() << "\n";
    return 3;
  }
  const json j = json::parse(answer, nullptr, false);
  if (j.is_discarded()) {
    std::cerr << "rocecap trigger: no answer from the daemon\n";
    return 3;
  }
  std::cout << j.dump(2) << "\n";
  return j.value("ok", false) ? 0 : 1;
}

}  // namespace

void add_trigger_command(CLI::App& app, Action& action) {
  auto a = std::make_shared<TriggerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "trigger",
      "Ask a running rocecapd (with a retention section) to dump a time window of its "
      "streams; prints what will be written");
  auto* where = cmd->add_option_group("daemon", "which daemon");
  where->add_option("--socket", a->socket, "the daemon's trigger socket (retention.socket)");
  where
      ->add_option("--config", a->config,
                   "the run file: its retention.socket, or <output.directory>/<run>/trigger.sock")
      ->check(CLI::ExistingFile);
  where->require_option(1);
  auto* start_opt = cmd->add_option(
      "--start", a->start, "window start: UTC (2026-11-23T22:40:01.25Z) or Unix nanoseconds");
  auto* end_opt = cmd->add_option("--end", a->end, "window end (exclusive), same forms");
  auto* antenna_opt =
      cmd->add_option("--antenna", a->antennas, "antenna to dump (repeat; default: all)");
  auto* group_opt =
      cmd->add_option("--group", a->groups, "group address:port to dump (repeat; default: all)");
  auto* label_opt =
      cmd->add_option("--label", a->label, "a name for the dump directory ([A-Za-z0-9._-])");
  auto* dm = cmd->add_option("--dm", a->dm,
                             "dispersion measure (pc cm^-3): each stream's window is shifted by "
                             "the delay at its frequencies (needs streams.frequencies)");
  cmd->add_option("--ref-freq", a->ref_freq,
                  "MHz: the frequency --start/--end are at (default: the top of the band)")
      ->needs(dm);
  auto* json_opt =
      cmd->add_option("--json", a->json_text,
                      "the whole request as JSON (doc/dumps.md), instead of the options above");
  cmd->add_option("--status", a->status,
                  "print the status and progress of dump N (the answer's \"id\") instead of "
                  "triggering; exit 0 found, 1 no such dump")
      ->check(CLI::PositiveNumber)
      ->excludes(start_opt, end_opt, antenna_opt, group_opt, label_opt, dm, json_opt);
  cmd->callback([a, &action] { action = [a] { return run_trigger(*a); }; });
}

}  // namespace rocecap::tools
