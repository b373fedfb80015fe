// The two listeners that take triggers (doc/dumps.md): the Unix trigger socket and the HTTP
// listener (GET /metrics, POST /trigger). Idle and slow clients must not delay anybody else's
// trigger or scrape (issue 23, item 5), a second listener must not take over a live socket
// (item 6), and the bearer scheme of the Authorization header is case-insensitive (item 15).
// Every client here is non-blocking and bounded in time: a listener that stalls makes the test
// fail with the times it saw, never hang.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/metric_family.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "daemon/lib/listeners/http_listener.hpp"
#include "daemon/lib/listeners/trigger_socket.hpp"
#include "daemon/lib/run/open_files.hpp"
#include "writer_test_util.hpp"
#include "writers/output_file.hpp"

namespace rocecap::daemon {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using writers::UniqueFd;

// The issue's bound: a trigger is answered within 100 ms whatever idle clients do.
constexpr milliseconds kIssueBound{100};
// How long a client here waits for an answer before it calls the exchange failed.
constexpr milliseconds kGiveUp{3000};

// A few hundred clients and their server ends need more descriptors than a login shell's
// default soft limit of 1024 may leave; the hard limit is ours to take.
void raise_open_files() {
  rlimit l{};
  if (::getrlimit(RLIMIT_NOFILE, &l) == 0 && l.rlim_cur < l.rlim_max) {
    l.rlim_cur = l.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &l);
  }
}

// A non-blocking client connected to the Unix socket `path`; no fd (and errno) when connect()
// fails, EAGAIN included (the listener's backlog is full: nobody accepts).
UniqueFd connect_unix(const std::string& path) {
  UniqueFd fd;
  fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) fd.reset();
  return fd;
}

// A non-blocking client connected to 127.0.0.1:port within kGiveUp; no fd when it is not.
UniqueFd connect_tcp(uint16_t port) {
  UniqueFd fd;
  fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa) == 0) return fd;
  pollfd p{fd.get(), POLLOUT, 0};
  int err = errno;
  socklen_t len = sizeof err;
  if (err != EINPROGRESS || ::poll(&p, 1, static_cast<int>(kGiveUp.count())) != 1 ||
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
    fd.reset();
  return fd;
}

bool send_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(kGiveUp.count())) != 1) return false;
    const ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n <= 0 && errno != EAGAIN) return false;
    if (n > 0) done += static_cast<std::size_t>(n);
  }
  return true;
}

// Everything the peer sends until it closes, or what came before `limit` passed.
struct Answer {
  std::string text;
  bool closed = false;  // the peer closed: the answer is whole
  milliseconds took{};
};

Answer read_answer(int fd, Clock::time_point started, milliseconds limit = kGiveUp) {
  Answer a;
  const auto deadline = started + limit;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) != 1) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      a.closed = true;
      break;
    }
    a.text.append(buf, static_cast<std::size_t>(n));
  }
  a.took = std::chrono::duration_cast<milliseconds>(Clock::now() - started);
  return a;
}

// One request over the trigger socket, as `rocecap trigger` sends it (a line, then shutdown).
Answer socket_exchange(const std::string& path, const std::string& request) {
  const auto t0 = Clock::now();
  UniqueFd fd = connect_unix(path);
  if (fd.get() < 0) return {"connect: " + std::string(std::strerror(errno)), false, {}};
  // A refusal may come (and the listener close) before the request is sent: as `rocecap
  // trigger` does, the answer is read whether the request went out or not.
  send_all(fd.get(), request + "\n");
  ::shutdown(fd.get(), SHUT_WR);
  return read_answer(fd.get(), t0);
}

Answer http_exchange(uint16_t port, const std::string& request) {
  const auto t0 = Clock::now();
  UniqueFd fd = connect_tcp(port);
  if (fd.get() < 0) return {"connect failed", false, {}};
  if (!send_all(fd.get(), request)) return {"send failed", false, {}};
  return read_answer(fd.get(), t0);
}

std::string post(const std::string& body, const std::string& extra_header = {}) {
  return "POST /trigger HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra_header +
         "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

const std::string kGetMetrics = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

class OneGauge : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily f{"rocecap_test_up", "test", prometheus::MetricType::Gauge, {}};
    f.metric.emplace_back();
    f.metric.back().gauge.value = 1;
    return {f};
  }
};

// The socket's handler: echoes the request's length so the answer proves it came through.
std::string echo(const std::string& request) {
  return "{\"ok\":true,\"bytes\":" + std::to_string(request.size()) + "}";
}

std::string times(const std::vector<Answer>& answers) {
  std::string s;
  for (const auto& a : answers)
    s += std::to_string(a.took.count()) + " ms" + (a.closed ? "" : " (unanswered)") + ", ";
  return s;
}

// The median of the exchanges' times: one scheduling hiccup on a loaded test machine is not
// the listener's doing; a listener serving clients one at a time delays every exchange.
milliseconds median(std::vector<Answer> answers) {
  std::sort(answers.begin(), answers.end(),
            [](const Answer& a, const Answer& b) { return a.took < b.took; });
  return answers[answers.size() / 2].took;
}

struct Listeners {
  writers::test::TempDir tmp;
  std::string path = (tmp.path() / "trigger.sock").string();
  std::shared_ptr<OneGauge> metrics = std::make_shared<OneGauge>();
  TriggerSocket socket{path, echo};
  HttpListener http{"127.0.0.1:0", metrics};
  uint16_t port = static_cast<uint16_t>(http.ports().at(0));
  Listeners() {
    http.set_trigger_handler([](const std::string& body, const std::string&) {
      return "{\"ok\":true,\"bytes\":" + std::to_string(body.size()) + "}";
    });
  }
};

TEST(TriggerListeners, OneIdleSocketClientDoesNotDelayATrigger) {
  Listeners l;
  std::vector<Answer> answers;
  for (int i = 0; i < 3; ++i) {
    // A new idle client before each trigger: one dropped at its deadline delays no later one.
    UniqueFd idle = connect_unix(l.path);
    ASSERT_GE(idle.get(), 0) << std::strerror(errno);
    answers.push_back(socket_exchange(l.path, "{\"start\": 1, \"end\": 2}"));
    ASSERT_TRUE(answers.back().closed) << answers.back().text;
    EXPECT_EQ(answers.back().text, "{\"ok\":true,\"bytes\":23}\n");
  }
  EXPECT_LE(median(answers), kIssueBound) << times(answers);
}

// The issue's test: 300 idle socket clients and 60 HTTP clients that sent half a header are
// held open while triggers (both ways) and scrapes are timed. Each must be answered within the
// issue's bound of 100 ms (the median of five, see median()).
TEST(TriggerListeners, TriggersAreAnsweredWithin100msWhileIdleAndSlowClientsAreHeld) {
  raise_open_files();
  Listeners l;
  std::vector<UniqueFd> idle;
  for (int i = 0; i < 300; ++i) {
    idle.push_back(connect_unix(l.path));
    if (idle.back().get() < 0) {
      ADD_FAILURE() << "idle socket client " << i << " could not connect: " << std::strerror(errno);
      idle.pop_back();
      break;
    }
  }
  for (int i = 0; i < 60; ++i) {
    idle.push_back(connect_tcp(l.port));
    ASSERT_GE(idle.back().get(), 0) << "slow HTTP client " << i;
    ASSERT_TRUE(send_all(idle.back().get(), "GET /metrics HTTP/1.1\r\nHost: x\r\n"));
  }
  std::vector<Answer> sock, web, scrape;
  for (int i = 0; i < 5; ++i) {
    sock.push_back(socket_exchange(l.path, "{\"start\": 1, \"end\": 2}"));
    EXPECT_EQ(sock.back().text, "{\"ok\":true,\"bytes\":23}\n");
    web.push_back(http_exchange(l.port, post("{\"start\": 1, \"end\": 2}")));
    EXPECT_NE(web.back().text.find("200 OK"), std::string::npos) << web.back().text;
    EXPECT_NE(web.back().text.find("{\"ok\":true,\"bytes\":22}"), std::string::npos);
    scrape.push_back(http_exchange(l.port, kGetMetrics));
    EXPECT_NE(scrape.back().text.find("rocecap_test_up 1"), std::string::npos);
  }
  EXPECT_LE(median(sock), kIssueBound) << "trigger socket: " << times(sock);
  EXPECT_LE(median(web), kIssueBound) << "POST /trigger: " << times(web);
  EXPECT_LE(median(scrape), kIssueBound) << "GET /metrics: " << times(scrape);
}

// Item 6: two runs given the same retention.socket. The second must not unlink the first's
// live socket and take its triggers: it is refused, naming the PID that listens there.
TEST(TriggerListeners, ASecondListenerOnALiveSocketIsRefusedNamingItsPid) {
  writers::test::TempDir tmp;
  const std::string path = (tmp.path() / "trigger.sock").string();
  TriggerSocket first(path, [](const std::string&) { return std::string("{\"run\":1}"); });
  try {
    TriggerSocket second(path, [](const std::string&) { return std::string("{\"run\":2}"); });
    ADD_FAILURE() << "a second listener took over the live socket " << path;
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("PID " + std::to_string(::getpid())), std::string::npos) << what;
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("retention.socket"), std::string::npos) << what;
  }
  const Answer a = socket_exchange(path, "{}");
  EXPECT_EQ(a.text, "{\"run\":1}\n") << "the first run's triggers went elsewhere";
}

TEST(TriggerListeners, AStaleSocketLeftByACrashIsReplaced) {
  writers::test::TempDir tmp;
  const std::string path = (tmp.path() / "trigger.sock").string();
  {  // bound, never unlinked: what a killed daemon leaves
    UniqueFd fd;
    fd.reset(::socket(AF_UNIX, SOCK_STREAM, 0));
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::strncpy(sa.sun_path, path.c_str(), sizeof sa.sun_path - 1);
    ASSERT_EQ(::bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof sa), 0);
  }
  TriggerSocket sock(path, echo);
  EXPECT_EQ(socket_exchange(path, "{}").text, "{\"ok\":true,\"bytes\":3}\n");
}

// Item 15: RFC 7235 makes the auth scheme case-insensitive; extra spaces are tolerated.
TEST(TriggerListeners, TheBearerSchemeIsCaseInsensitiveAndSpacesAreTolerated) {
  writers::test::TempDir tmp;
  auto metrics = std::make_shared<OneGauge>();
  HttpListener http("127.0.0.1:0", metrics);
  const auto port = static_cast<uint16_t>(http.ports().at(0));
  http.set_trigger_handler([](const std::string&, const std::string& bearer) {
    return "{\"ok\":" + std::string(bearer == "s3cret" ? "true" : "false") + ",\"bearer\":\"" +
           bearer + "\"}";
  });
  for (const char* header :
       {"Authorization: Bearer s3cret", "Authorization: bearer s3cret",
        "authorization: BEARER   s3cret  ", "Authorization:   bEaReR\ts3cret"}) {
    const Answer a = http_exchange(port, post("{}", std::string(header) + "\r\n"));
    EXPECT_NE(a.text.find("200 OK"), std::string::npos) << header << ": " << a.text;
    EXPECT_NE(a.text.find("\"bearer\":\"s3cret\""), std::string::npos) << header << ": " << a.text;
  }
  for (const char* header : {"Authorization: Basic s3cret", "Authorization: Bearers3cret"}) {
    const Answer a = http_exchange(port, post("{}", std::string(header) + "\r\n"));
    EXPECT_NE(a.text.find("\"bearer\":\"\""), std::string::npos) << header << ": " << a.text;
  }
}

// A missing or wrong token is 401 Unauthorized with a Bearer challenge (RFC 7235 section 3.1,
// RFC 6750 section 3), for a trigger and for a status question; other refusals stay 400, an
// unknown dump 404.
TEST(TriggerListeners, AMissingOrWrongTokenIs401WithABearerChallenge) {
  auto metrics = std::make_shared<OneGauge>();
  HttpListener http("127.0.0.1:0", metrics);
  const auto port = static_cast<uint16_t>(http.ports().at(0));
  auto refusal = [](const std::string& token) -> std::string {
    if (token == "s3cret") return "{\"ok\":true}";
    if (token == "bad-request") return "{\"ok\":false,\"reason\":\"malformed\"}";
    return "{\"ok\":false,\"reason\":\"unauthorized\",\"error\":\"wrong token\"}";
  };
  http.set_trigger_handler(
      [&](const std::string&, const std::string& bearer) { return refusal(bearer); });
  http.set_status_handler([&](uint64_t id, const std::string& token) -> std::string {
    if (id == 9) return "{\"ok\":false,\"reason\":\"unknown_dump\"}";
    return refusal(token);
  });
  auto head = [](const Answer& a) { return a.text.substr(0, a.text.find("\r\n\r\n")); };
  auto get = [&](const std::string& path, const std::string& auth) {
    return http_exchange(port, "GET " + path + " HTTP/1.1\r\n" + auth + "\r\n");
  };
  for (const std::string auth : {"", "Authorization: Bearer wrong\r\n"}) {
    for (const Answer& a : {http_exchange(port, post("{}", auth)), get("/trigger/2", auth)}) {
      EXPECT_EQ(a.text.rfind("HTTP/1.1 401 Unauthorized\r\n", 0), 0u) << a.text;
      EXPECT_NE(head(a).find("\r\nWWW-Authenticate: Bearer realm=\"rocecap\""), std::string::npos)
          << a.text;
      EXPECT_NE(a.text.find("\"reason\":\"unauthorized\""), std::string::npos) << a.text;
    }
  }
  const std::string good = "Authorization: Bearer s3cret\r\n";
  EXPECT_EQ(http_exchange(port, post("{}", good)).text.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  EXPECT_EQ(get("/trigger/2", good).text.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
  const Answer malformed = http_exchange(port, post("{}", "Authorization: Bearer bad-request\r\n"));
  EXPECT_EQ(malformed.text.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << malformed.text;
  EXPECT_EQ(head(malformed).find("WWW-Authenticate"), std::string::npos) << malformed.text;
  EXPECT_EQ(get("/trigger/9", good).text.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u);
}

// The value of `series` (a full line prefix such as `name{labels}`) in an exposition; -1: none.
double metric(const std::string& exposition, const std::string& series) {
  const auto at = exposition.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(exposition.substr(at + series.size() + 2));
}

// Beyond max_connections the next client is refused at once, with words, and counted; the
// held ones stay served.
TEST(TriggerListeners, AConnectionBeyondTheLimitIsRefusedAtOnceAndCounted) {
  writers::test::TempDir tmp;
  const std::string path = (tmp.path() / "trigger.sock").string();
  const ListenerLimits limits{4, std::chrono::milliseconds(5000), std::chrono::milliseconds(5000)};
  TriggerSocket sock(path, echo, limits);
  auto metrics = std::make_shared<OneGauge>();
  HttpListener http("127.0.0.1:0", metrics, limits);
  http.show_listener("trigger_socket", sock.counters());
  const auto port = static_cast<uint16_t>(http.ports().at(0));
  std::vector<UniqueFd> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(connect_unix(path));
    held.push_back(connect_tcp(port));
    ASSERT_GE(held.back().get(), 0);
  }
  const Answer unix_refused = socket_exchange(path, "{}");
  EXPECT_TRUE(unix_refused.closed);
  EXPECT_LE(unix_refused.took, kIssueBound);
  EXPECT_EQ(unix_refused.text,
            "{\"ok\":false,\"reason\":\"busy\",\"error\":\"the trigger socket has 4 connections "
            "open (its limit); try again\"}\n");
  const Answer http_refused = http_exchange(port, kGetMetrics);
  EXPECT_TRUE(http_refused.closed);
  EXPECT_LE(http_refused.took, kIssueBound);
  EXPECT_EQ(http_refused.text.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0), 0u)
      << http_refused.text;
  EXPECT_NE(http_refused.text.find("too many connections (4 open)"), std::string::npos);
  held.clear();  // the held clients go; the listeners take new ones again
  for (int i = 0; i < 200 && sock.counters()->open.get() != 0; ++i)
    std::this_thread::sleep_for(milliseconds(10));
  // Until the HTTP listener has seen its held clients go, a scrape is refused too (counted).
  Answer scrape;
  int refused = 1;
  for (int i = 0; i < 200 && scrape.text.find("200 OK") == std::string::npos; ++i) {
    scrape = http_exchange(port, kGetMetrics);
    refused += scrape.text.find(" 503 ") != std::string::npos;
  }
  const std::string over = "rocecap_listener_refused_connections_total{listener=\"";
  EXPECT_EQ(metric(scrape.text, over + "http\",reason=\"over_limit\"}"), refused) << scrape.text;
  EXPECT_EQ(metric(scrape.text, over + "trigger_socket\",reason=\"over_limit\"}"), 1);
  EXPECT_EQ(metric(scrape.text, "rocecap_listener_connections_total{listener=\"trigger_socket\"}"),
            5);
  EXPECT_EQ(socket_exchange(path, "{}").text, "{\"ok\":true,\"bytes\":3}\n");
}

// A client that sends no complete request is answered and closed at its deadline (not
// before), and counted.
TEST(TriggerListeners, AnIncompleteRequestIsAnsweredAndClosedAtItsDeadline) {
  writers::test::TempDir tmp;
  const std::string path = (tmp.path() / "trigger.sock").string();
  const milliseconds deadline{300};
  const ListenerLimits limits{16, deadline, std::chrono::milliseconds(5000)};
  TriggerSocket sock(path, echo, limits);
  auto metrics = std::make_shared<OneGauge>();
  HttpListener http("127.0.0.1:0", metrics, limits);
  const auto port = static_cast<uint16_t>(http.ports().at(0));
  const auto t0 = Clock::now();
  UniqueFd quiet = connect_unix(path);
  UniqueFd half = connect_unix(path);
  UniqueFd slow = connect_tcp(port);
  ASSERT_TRUE(send_all(half.get(), "{\"start\": 1,"));
  ASSERT_TRUE(send_all(slow.get(), "GET /metrics HTTP/1.1\r\nHost: x\r\n"));
  for (int fd : {quiet.get(), half.get()}) {
    const Answer a = read_answer(fd, t0);
    EXPECT_TRUE(a.closed);
    EXPECT_GE(a.took, deadline);
    EXPECT_EQ(a.text,
              "{\"ok\":false,\"reason\":\"malformed\",\"error\":\"no complete request (one JSON "
              "object, at most 64 KiB, within 300 ms)\"}\n");
  }
  const Answer a = read_answer(slow.get(), t0);
  EXPECT_TRUE(a.closed);
  EXPECT_GE(a.took, deadline);
  EXPECT_EQ(a.text.rfind("HTTP/1.1 408 Request Timeout\r\n", 0), 0u) << a.text;
  EXPECT_EQ(sock.counters()->deadline.get(), 2u);
  const Answer scrape = http_exchange(port, kGetMetrics);
  EXPECT_EQ(metric(scrape.text,
                   "rocecap_listener_refused_connections_total{listener=\"http\",reason="
                   "\"deadline\"}"),
            1)
      << scrape.text;
}

// What the HTTP listener answers besides the two pages, and its bounds.
TEST(TriggerListeners, HttpRequestsOutsideTheTwoPagesGetClearAnswers) {
  auto metrics = std::make_shared<OneGauge>();
  HttpListener http("127.0.0.1:0", metrics);
  const auto port = static_cast<uint16_t>(http.ports().at(0));
  const auto status = [port](const std::string& request) {
    const Answer a = http_exchange(port, request);
    return a.text.substr(0, a.text.find("\r\n"));
  };
  EXPECT_EQ(status("GET /nothing HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 Not Found");
  EXPECT_EQ(status("DELETE /metrics HTTP/1.1\r\n\r\n"), "HTTP/1.1 405 Method Not Allowed");
  EXPECT_EQ(status("GET /trigger HTTP/1.1\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status("nonsense\r\n\r\n"), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status("GET /metrics HTTP/2.0\r\n\r\n"), "HTTP/1.1 505 HTTP Version Not Supported");
  EXPECT_EQ(status("GET /metrics HTTP/1.1\r\nX: " + std::string(20000, 'x') + "\r\n\r\n"),
            "HTTP/1.1 431 Request Header Fields Too Large");
  // No handler yet (no retention): 404 with the reason, as before.
  EXPECT_NE(http_exchange(port, post("{}")).text.find("\"reason\":\"not_running\""),
            std::string::npos);
  http.set_trigger_handler([](const std::string& body, const std::string&) {
    return "{\"ok\":true,\"bytes\":" + std::to_string(body.size()) + "}";
  });
  EXPECT_EQ(
      status("POST /trigger HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
      "HTTP/1.1 411 Length Required");
  const Answer big = http_exchange(port, post(std::string(70000, ' ')));
  EXPECT_NE(big.text.find("400 Bad Request"), std::string::npos) << big.text.substr(0, 200);
  EXPECT_NE(big.text.find("request body over 64 KiB"), std::string::npos);
  // GET /metrics?query and bare LF line ends are served.
  EXPECT_NE(http_exchange(port, "GET /metrics?x=1 HTTP/1.0\n\n").text.find("rocecap_test_up 1"),
            std::string::npos);
}

// curl sends "Expect: 100-continue" before a large body and waits for the interim answer.
TEST(TriggerListeners, ExpectContinueGetsTheInterimAnswerThenTheReply) {
  auto metrics = std::make_shared<OneGauge>();
  HttpListener http("127.0.0.1:0", metrics);
  const auto port = static_cast<uint16_t>(http.ports().at(0));
  http.set_trigger_handler([](const std::string& body, const std::string&) {
    return "{\"ok\":true,\"bytes\":" + std::to_string(body.size()) + "}";
  });
  const std::string body(2000, ' ');
  UniqueFd fd = connect_tcp(port);
  ASSERT_TRUE(
      send_all(fd.get(), "POST /trigger HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " +
                             std::to_string(body.size()) + "\r\n\r\n"));
  std::string interim;
  char buf[256];
  pollfd p{fd.get(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, static_cast<int>(kGiveUp.count())), 1);
  const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)), "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_TRUE(send_all(fd.get(), body));
  const Answer a = read_answer(fd.get(), Clock::now());
  EXPECT_NE(a.text.find("200 OK"), std::string::npos) << a.text;
  EXPECT_NE(a.text.find("{\"ok\":true,\"bytes\":2000}"), std::string::npos) << a.text;
}

// rocecapd raises its soft open-files limit to the hard one when the soft one cannot hold the
// listeners' connections, and says so; a hard limit that is too low is a warning.
TEST(TriggerListeners, TheOpenFilesLimitIsRaisedToTheHardOneWhenTooLowForTheListeners) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max < 1024) GTEST_SKIP() << "hard RLIMIT_NOFILE " << saved.rlim_max;
  rlimit low = saved;
  low.rlim_cur = 512;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  const OpenFilesNote raised = raise_open_files_limit(1000);
  rlimit now{};
  ::getrlimit(RLIMIT_NOFILE, &now);
  EXPECT_EQ(now.rlim_cur, saved.rlim_max);
  EXPECT_FALSE(raised.warning);
  EXPECT_NE(raised.words.find("open files: raised the soft limit RLIMIT_NOFILE from 512 to the "
                              "hard limit " +
                              std::to_string(saved.rlim_max)),
            std::string::npos)
      << raised.words;
  EXPECT_TRUE(raise_open_files_limit(1000).words.empty()) << "nothing more to do";
  const OpenFilesNote short_hard = raise_open_files_limit(saved.rlim_max + 1);
  EXPECT_TRUE(short_hard.warning);
  EXPECT_NE(short_hard.words.find("(the hard limit)"), std::string::npos) << short_hard.words;
  EXPECT_NE(short_hard.words.find("refused (no_fd)"), std::string::npos) << short_hard.words;
  ::setrlimit(RLIMIT_NOFILE, &saved);
}

}  // namespace
}  // namespace rocecap::daemon
