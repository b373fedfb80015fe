// The metrics listener (metrics.listen): a small HTTP/1.1 server of our own with two pages.
// GET /metrics is the Prometheus text exposition of a collectable (prometheus-cpp's
// TextSerializer); POST /trigger hands the request body to the triggered-dump handler
// (doc/dumps.md) once one is set, so that detection pipelines on the network reach the same
// service as `rocecap trigger`; GET /trigger/<id> asks the status handler how dump <id> is
// doing (200 with its JSON, 404 when there is no such dump, 400 when refused). The listener is
// loopback by default; a token (retention.http_token_file) is checked by the handler: in the JSON
// body ("token") or as "Authorization: Bearer <token>" (the scheme in any case).
//
// It is event-driven (conn_server.hpp), not a thread per connection: civetweb's workers (two
// here before) were each held by a client that sent half a header, so 60 such clients made
// /metrics and /trigger time out. Now every connection has a deadline, at most 256 are open
// (the next is answered 503 at once), the head is bounded to 16 KiB and a trigger's body to
// 64 KiB, sent with Content-Length. Every answer closes the connection.
#pragma once

#include <prometheus/collectable.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "daemon/lib/listeners/conn_server.hpp"

namespace rocecap::daemon {

inline constexpr ListenerLimits kHttpLimits{256, std::chrono::milliseconds(5000),
                                            std::chrono::milliseconds(10000)};

class HttpListener {
 public:
  // body, the Authorization header's bearer token (empty when none) -> the JSON answer.
  using TriggerHandler =
      std::function<std::string(const std::string& body, const std::string& token)>;

  // A dump's id (a positive integer from the path), the bearer token (empty when none) -> the
  // JSON answer: its status, or a refusal ("unknown_dump", "unauthorized").
  using StatusHandler = std::function<std::string(uint64_t id, const std::string& token)>;

  // Listens on `where` ("127.0.0.1:9464"; port 0: any free port). Throws std::runtime_error
  // "cannot listen on <where>: <why in words>".
  HttpListener(const std::string& where, std::weak_ptr<prometheus::Collectable> metrics,
               ListenerLimits limits = kHttpLimits);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  std::vector<int> ports() const { return {port_}; }
  // Any thread; empty: POST /trigger answers 404 (no retention in this run).
  void set_trigger_handler(TriggerHandler handler);
  // Any thread; empty: GET /trigger/<id> answers 404 (no retention in this run).
  void set_status_handler(StatusHandler handler);
  // Any thread: `counters` of another listener (the trigger socket) appear in GET /metrics
  // beside this one's as rocecap_listener_*{listener="<name>"}.
  void show_listener(std::string name, std::shared_ptr<const ListenerCounters> counters);

 private:
  struct Shared;  // what the listener's thread reads: handler, collectable, listeners
  std::shared_ptr<Shared> shared_;
  int port_ = 0;
  std::unique_ptr<ConnServer> server_;
};

}  // namespace rocecap::daemon
