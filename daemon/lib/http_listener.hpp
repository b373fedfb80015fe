// The metrics listener (metrics.listen): one civetweb server with two pages. GET /metrics is
// the Prometheus text exposition of a collectable (what prometheus::Exposer served before);
// POST /trigger hands the request body to the triggered-dump handler (doc/dumps.md) once one is
// set, so that detection pipelines on the network reach the same service as `rocecap trigger`.
// The listener is loopback by default; a token (retention.http_token_file) is checked by the
// handler: in the JSON body ("token") or as "Authorization: Bearer <token>".
#pragma once

#include <prometheus/collectable.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

class CivetServer;

namespace rocecap::daemon {

class HttpListener {
 public:
  // body, the Authorization header's bearer token (empty when none) -> the JSON answer.
  using TriggerHandler =
      std::function<std::string(const std::string& body, const std::string& token)>;

  // Listens on `where` ("127.0.0.1:9464"). Throws std::runtime_error when civetweb cannot.
  HttpListener(const std::string& where, std::weak_ptr<prometheus::Collectable> metrics);
  ~HttpListener();
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  std::vector<int> ports() const;
  // Any thread; empty: POST /trigger answers 404 (no retention in this run).
  void set_trigger_handler(TriggerHandler handler);

 private:
  class Metrics;
  class Trigger;
  std::unique_ptr<Metrics> metrics_;
  std::unique_ptr<Trigger> trigger_;
  std::unique_ptr<CivetServer> server_;
};

}  // namespace rocecap::daemon
