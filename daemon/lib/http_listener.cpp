#include "daemon/lib/http_listener.hpp"

#include <CivetServer.h>
#include <prometheus/text_serializer.h>

#include <stdexcept>

namespace rocecap::daemon {
namespace {

constexpr long long kMaxTriggerBody = 64 * 1024;

void reply(mg_connection* conn, int status, const char* type, const std::string& body) {
  const char* text = status == 200 ? "OK" : status == 404 ? "Not Found" : "Bad Request";
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: "
            "close\r\n\r\n",
            status, text, type, body.size());
  mg_write(conn, body.data(), body.size());
}

}  // namespace

class HttpListener::Metrics : public CivetHandler {
 public:
  explicit Metrics(std::weak_ptr<prometheus::Collectable> c) : collectable_(std::move(c)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    std::string body;
    if (auto c = collectable_.lock()) body = prometheus::TextSerializer().Serialize(c->Collect());
    reply(conn, 200, "text/plain; version=0.0.4; charset=utf-8", body);
    return true;
  }

 private:
  std::weak_ptr<prometheus::Collectable> collectable_;
};

class HttpListener::Trigger : public CivetHandler {
 public:
  void set(TriggerHandler h) {
    std::lock_guard lock(mu_);
    handler_ = std::move(h);
  }
  bool handlePost(CivetServer*, mg_connection* conn) override {
    TriggerHandler h;
    {
      std::lock_guard lock(mu_);
      h = handler_;
    }
    if (!h) {
      reply(conn, 404, "application/json",
            "{\"ok\":false,\"reason\":\"not_running\",\"error\":\"this run has no retention "
            "section: nothing to dump\"}\n");
      return true;
    }
    const mg_request_info* info = mg_get_request_info(conn);
    if (info->content_length > kMaxTriggerBody) {
      reply(conn, 400, "application/json",
            "{\"ok\":false,\"reason\":\"malformed\",\"error\":\"request body over 64 KiB\"}\n");
      return true;
    }
    std::string body;
    char buf[4096];
    int n;
    while (body.size() <= kMaxTriggerBody && (n = mg_read(conn, buf, sizeof buf)) > 0)
      body.append(buf, static_cast<std::size_t>(n));
    std::string token;
    if (const char* auth = mg_get_header(conn, "Authorization")) {
      const std::string a = auth;
      if (a.rfind("Bearer ", 0) == 0) token = a.substr(7);
    }
    const std::string answer = h(body, token);
    reply(conn, answer.find("\"ok\":true") != std::string::npos ? 200 : 400, "application/json",
          answer + "\n");
    return true;
  }
  bool handleGet(CivetServer*, mg_connection* conn) override {
    reply(conn, 400, "text/plain", "POST a JSON trigger request (doc/dumps.md)\n");
    return true;
  }

 private:
  std::mutex mu_;
  TriggerHandler handler_;
};

HttpListener::HttpListener(const std::string& where, std::weak_ptr<prometheus::Collectable> m)
    : metrics_(std::make_unique<Metrics>(std::move(m))), trigger_(std::make_unique<Trigger>()) {
  const std::vector<std::string> options{"listening_ports", where, "num_threads", "2"};
  server_ = std::make_unique<CivetServer>(options);
  server_->addHandler("/metrics", *metrics_);
  server_->addHandler("/trigger", *trigger_);
}

HttpListener::~HttpListener() {
  server_.reset();  // stops the threads before the handlers go
}

std::vector<int> HttpListener::ports() const {
  return server_->getListeningPorts();
}

void HttpListener::set_trigger_handler(TriggerHandler handler) {
  trigger_->set(std::move(handler));
}

}  // namespace rocecap::daemon
