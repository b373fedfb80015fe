#include "daemon/lib/listeners/http_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "daemon/lib/listeners/http_request.hpp"

namespace rocecap::daemon {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

constexpr std::size_t kMaxTriggerBody = 64 * 1024;
constexpr const char* kJson = "application/json";
constexpr const char* kText = "text/plain";
constexpr const char* kStatusPrefix = "/trigger/";  // GET /trigger/<id>

// "7" or "0007" -> 7; nullopt for 0, an empty id, anything but digits, or more than uint64.
std::optional<uint64_t> parse_dump_id(const std::string& text) {
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  uint64_t id = 0;
  for (char c : text) {
    const auto d = static_cast<uint64_t>(c - '0');
    if (id > (UINT64_MAX - d) / 10) return std::nullopt;
    id = id * 10 + d;
  }
  if (id == 0) return std::nullopt;
  return id;
}

const char* status_text(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 411:
      return "Length Required";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Internal Server Error";
  }
}

std::string response(int status, const char* type, const std::string& body,
                     const std::string& extra_headers = {}) {
  return "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
         "\r\nContent-Type: " + type + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n" + extra_headers + "Connection: close\r\n\r\n" + body;
}

// The answer to a handler's JSON: 200 when it says ok; a missing or wrong token is 401 with
// the Bearer challenge RFC 6750 section 3 asks of a protected resource, so HTTP clients and
// proxies tell it from a malformed request; `not_found_reason` (if any) is 404; other refusals 400.
std::string handler_response(const std::string& answer, const char* not_found_reason = nullptr) {
  auto says = [&](const char* reason) {
    return answer.find("\"reason\":\"" + std::string(reason) + "\"") != std::string::npos;
  };
  if (answer.find("\"ok\":true") != std::string::npos) return response(200, kJson, answer + "\n");
  if (says("unauthorized")) {
    return response(401, kJson, answer + "\n", "WWW-Authenticate: Bearer realm=\"rocecap\"\r\n");
  }
  if (not_found_reason != nullptr && says(not_found_reason)) {
    return response(404, kJson, answer + "\n");
  }
  return response(400, kJson, answer + "\n");
}

std::string bind_words(int err) {
  switch (err) {
    case EADDRINUSE:
      return "the address is already in use (another process listens on it; `ss -ltnp` "
             "names it); choose another metrics.listen port";
    case EADDRNOTAVAIL:
      return "the address is not one of this host's; use one of its addresses, 127.0.0.1 or "
             "0.0.0.0";
    case EACCES:
      return "ports below 1024 need CAP_NET_BIND_SERVICE; use a higher port";
    default:
      return std::strerror(err);
  }
}

// A listening TCP socket on "a.b.c.d:port"; `port` gets the bound port (for port 0).
writers::UniqueFd listen_tcp(const std::string& where, int& port) {
  const auto fail = [&where](const std::string& why) {
    return std::runtime_error("cannot listen on " + where + ": " + why);
  };
  const auto colon = where.rfind(':');
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  const std::string digits = colon == std::string::npos ? "" : where.substr(colon + 1);
  if (colon == std::string::npos ||
      ::inet_pton(AF_INET, where.substr(0, colon).c_str(), &sa.sin_addr) != 1 || digits.empty() ||
      digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(digits) > 65535)
    throw fail("not an IPv4 address:port");
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(digits)));
  writers::UniqueFd fd;
  fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw fail(std::strerror(errno));
  // A port held only by an earlier run's connections in TIME_WAIT can be bound again.
  const int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0)
    throw fail(bind_words(errno));
  socklen_t len = sizeof sa;
  if (::listen(fd.get(), SOMAXCONN) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0)
    throw fail(std::strerror(errno));
  port = ntohs(sa.sin_port);
  return fd;
}

void add(MetricFamily& f, const std::string& listener, double value, const char* reason = nullptr) {
  ClientMetric m;
  m.label = {{"listener", listener}};
  if (reason != nullptr) m.label.push_back({"reason", reason});
  if (f.type == MetricType::Counter)
    m.counter.value = value;
  else
    m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

using Listeners = std::vector<std::pair<std::string, std::shared_ptr<const ListenerCounters>>>;

void add_listener_families(std::vector<MetricFamily>& out, const Listeners& listeners) {
  MetricFamily accepted{"rocecap_listener_connections_total",
                        "Connections accepted by the metrics listener (http) and the trigger "
                        "socket (trigger_socket), refused ones included",
                        MetricType::Counter,
                        {}};
  MetricFamily open{
      "rocecap_listener_open_connections", "Connections open now", MetricType::Gauge, {}};
  MetricFamily refused{
      "rocecap_listener_refused_connections_total",
      "Connections refused or cut off by a bound: over_limit (the most open at once reached: "
      "refused at once), no_fd (out of file descriptors), deadline (no complete request in "
      "time, or the answer not taken), too_large (over a size bound: answered with an error)",
      MetricType::Counter,
      {}};
  for (const auto& [name, c] : listeners) {
    add(accepted, name, double(c->accepted.get()));
    add(open, name, double(c->open.get()));
    add(refused, name, double(c->over_limit.get()), "over_limit");
    add(refused, name, double(c->no_fd.get()), "no_fd");
    add(refused, name, double(c->deadline.get()), "deadline");
    add(refused, name, double(c->too_large.get()), "too_large");
  }
  out.push_back(std::move(accepted));
  out.push_back(std::move(open));
  out.push_back(std::move(refused));
}

}  // namespace

struct HttpListener::Shared {
  std::weak_ptr<prometheus::Collectable> metrics;
  std::mutex mu;  // guards what follows: set from other threads
  TriggerHandler trigger;
  StatusHandler status;
  Listeners listeners;

  std::optional<ConnReply> answer(const std::string& in, bool done);
  std::string metrics_page();
  std::optional<ConnReply> trigger_page(const HttpHead& h, const std::string& in, bool done);
  ConnReply status_page(const HttpHead& h, const std::string& id);
};

std::optional<ConnReply> HttpListener::Shared::answer(const std::string& in, bool done) {
  const std::optional<HttpHead> h = parse_http_head(in);
  if (!h) return std::nullopt;
  if (h->error != 0)
    return ConnReply{response(h->error, kText, h->why + "\n"), true, h->error == 431};
  const std::string path = h->path();
  if (path == "/metrics" && h->method == "GET") return ConnReply{metrics_page()};
  if (path == "/metrics")
    return ConnReply{response(405, kText, "GET /metrics\n", "Allow: GET\r\n")};
  if (path == "/trigger" && h->method == "POST") return trigger_page(*h, in, done);
  if (path == "/trigger" && h->method == "GET")
    return ConnReply{response(400, kText, "POST a JSON trigger request (doc/dumps.md)\n")};
  if (path == "/trigger")
    return ConnReply{response(405, kText, "POST /trigger\n", "Allow: POST\r\n")};
  if (path.rfind(kStatusPrefix, 0) == 0 && h->method == "GET")
    return status_page(*h, path.substr(std::strlen(kStatusPrefix)));
  if (path.rfind(kStatusPrefix, 0) == 0)
    return ConnReply{response(405, kText, "GET /trigger/<id>\n", "Allow: GET\r\n")};
  return ConnReply{response(
      404, kText,
      "not found: this listener serves GET /metrics, POST /trigger and GET /trigger/<id>\n")};
}

std::string HttpListener::Shared::metrics_page() {
  try {
    std::vector<MetricFamily> families;
    if (auto c = metrics.lock()) families = c->Collect();
    Listeners shown;
    {
      std::lock_guard lock(mu);
      shown = listeners;
    }
    add_listener_families(families, shown);
    return response(200, "text/plain; version=0.0.4; charset=utf-8",
                    prometheus::TextSerializer().Serialize(families));
  } catch (const std::exception& e) {
    return response(500, kText, std::string("metrics: ") + e.what() + "\n");
  }
}

std::optional<ConnReply> HttpListener::Shared::trigger_page(const HttpHead& h,
                                                            const std::string& in, bool done) {
  TriggerHandler handler;
  {
    std::lock_guard lock(mu);
    handler = trigger;
  }
  if (!handler) {
    return ConnReply{response(404, kJson,
                              "{\"ok\":false,\"reason\":\"not_running\",\"error\":\"this run has "
                              "no retention section: nothing to dump\"}\n")};
  }
  const std::size_t need = h.content_length.value_or(0);
  if (need > kMaxTriggerBody) {
    return ConnReply{response(400, kJson,
                              "{\"ok\":false,\"reason\":\"malformed\",\"error\":\"request body "
                              "over 64 KiB\"}\n"),
                     true, true};
  }
  const std::size_t have = in.size() - h.size;
  if (have < need && done) {
    return ConnReply{response(400, kJson,
                              "{\"ok\":false,\"reason\":\"malformed\",\"error\":\"request body "
                              "shorter than its Content-Length\"}\n")};
  }
  if (have < need && h.expect_continue && have == 0)
    return ConnReply{"HTTP/1.1 100 Continue\r\n\r\n", false};
  if (have < need) return std::nullopt;
  std::string answer;
  try {
    answer = handler(in.substr(h.size, need), bearer_token(h.authorization));
  } catch (const std::exception&) {
    return ConnReply{response(500, kJson,
                              "{\"ok\":false,\"reason\":\"internal\",\"error\":\"internal "
                              "error\"}\n")};
  }
  return ConnReply{handler_response(answer)};
}

// GET /trigger/<id>: the status of dump <id> (the handler checks the token, as for a trigger).
ConnReply HttpListener::Shared::status_page(const HttpHead& h, const std::string& id_text) {
  StatusHandler handler;
  {
    std::lock_guard lock(mu);
    handler = status;
  }
  if (!handler) {
    return ConnReply{response(404, kJson,
                              "{\"ok\":false,\"reason\":\"not_running\",\"error\":\"this run has "
                              "no retention section: no dumps\"}\n")};
  }
  const std::optional<uint64_t> id = parse_dump_id(id_text);
  if (!id) {
    return ConnReply{response(400, kJson,
                              "{\"ok\":false,\"reason\":\"malformed\",\"error\":\"GET "
                              "/trigger/<id>: the id must be a dump's number, a positive "
                              "integer\"}\n")};
  }
  std::string answer;
  try {
    answer = handler(*id, bearer_token(h.authorization));
  } catch (const std::exception&) {
    return ConnReply{response(500, kJson,
                              "{\"ok\":false,\"reason\":\"internal\",\"error\":\"internal "
                              "error\"}\n")};
  }
  return ConnReply{handler_response(answer, "unknown_dump")};
}

HttpListener::HttpListener(const std::string& where, std::weak_ptr<prometheus::Collectable> m,
                           ListenerLimits limits)
    : shared_(std::make_shared<Shared>()) {
  shared_->metrics = std::move(m);
  writers::UniqueFd fd = listen_tcp(where, port_);
  ConnProtocol p;
  p.answer = [s = shared_](const std::string& in, bool done) { return s->answer(in, done); };
  p.over_limit = response(
      503, kText,
      "too many connections (" + std::to_string(limits.max_connections) + " open); try again\n",
      "Retry-After: 1\r\n");
  p.too_slow = response(
      408, kText,
      "no complete request within " + std::to_string(limits.request_deadline.count()) + " ms\n");
  server_ = std::make_unique<ConnServer>(std::move(fd), limits, std::move(p));
  show_listener("http", server_->counters());
}

HttpListener::~HttpListener() {
  server_.reset();  // stops the thread before what it reads goes
}

void HttpListener::set_trigger_handler(TriggerHandler handler) {
  std::lock_guard lock(shared_->mu);
  shared_->trigger = std::move(handler);
}

void HttpListener::set_status_handler(StatusHandler handler) {
  std::lock_guard lock(shared_->mu);
  shared_->status = std::move(handler);
}

void HttpListener::show_listener(std::string name,
                                 std::shared_ptr<const ListenerCounters> counters) {
  std::lock_guard lock(shared_->mu);
  shared_->listeners.emplace_back(std::move(name), std::move(counters));
}

}  // namespace rocecap::daemon
