// The Prometheus exposition of a run. Nothing is counted for it: at scrape time the collector
// reads the counters the capture and writer threads already keep (relaxed atomics, or the
// copies they publish in PublishedStats), so the capture path pays nothing for metrics.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/lib/listeners/http_listener.hpp"
#include "daemon/lib/run/run_assembly.hpp"

namespace rocecap::daemon {

struct MetricsBuildInfo {
  std::string version;
  std::string backend;
  std::string payload_memory;         // host | gpu
  std::string payload_memory_reason;  // why that memory was chosen
  int attempt = 1;                    // rocecap_run_attempt: > 1 after a restart
};

enum class RunState : int { starting, running, stopping, stopped };
inline constexpr int kRunStateCount = 4;
const char* run_state_name(RunState s) noexcept;

class MetricsCollector final : public prometheus::Collectable {
 public:
  // `rt` must outlive every Collect() call (destroy the MetricsServer first).
  MetricsCollector(const Runtime& rt, MetricsBuildInfo info, int64_t process_start_ns);

  void set_state(RunState s) noexcept { state_.store(static_cast<int>(s)); }
  // The run's consumer socket (doc/consumers.md); must outlive every Collect() call.
  void set_consumers(const class ConsumerService* c) noexcept { consumers_.store(c); }
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const Runtime& rt_;
  MetricsBuildInfo info_;
  int64_t process_start_ns_;
  std::atomic<int> state_{static_cast<int>(RunState::starting)};
  std::atomic<const class ConsumerService*> consumers_{nullptr};
};

// The pull exposer on `address:port` (port 0: any free port), serving /metrics.
class MetricsServer {
 public:
  // Throws std::runtime_error naming the address when it cannot listen.
  MetricsServer(uint32_t address, uint16_t port, std::shared_ptr<MetricsCollector> collector);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  uint16_t port() const;  // the bound port
  MetricsCollector& collector() noexcept { return *collector_; }
  // POST /trigger on the same listener (doc/dumps.md).
  HttpListener& http() noexcept { return *http_; }

 private:
  std::shared_ptr<MetricsCollector> collector_;
  std::unique_ptr<HttpListener> http_;  // GET /metrics, POST /trigger
};

// Starts the exposer on config.metrics when enabled (nullptr otherwise); build info comes from
// the run's manifest view. Throws std::runtime_error when it cannot listen. Destroy it before
// `rt`.
std::unique_ptr<MetricsServer> start_metrics(Runtime& rt, const std::string& version,
                                             int64_t process_start_ns);

}  // namespace rocecap::daemon
