// Consumers of a run (doc/consumers.md): a descriptor log per stream, handed to the stream's
// writer, and the consumer socket that offers them. Built before the writer and capture
// threads start; torn down after they ended (the logs are told so first).
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "daemon/lib/consumers/consumer_service.hpp"
#include "daemon/lib/run/run_assembly.hpp"
#include "writers/consumer_log.hpp"

namespace rocecap::daemon {

struct Consumers {
  std::vector<std::unique_ptr<writers::ConsumerLog>> logs;  // every stream of the run
  std::unique_ptr<ConsumerService> service;                 // null: no consumers section
  // After the writers ended: consumers see every stream end once they read what is there.
  void end() noexcept {
    for (auto& l : logs)
      l->end();
  }
};

// The stream's name for consumers: "<antenna>@<group address>:<port>", "/t<thread>" added
// for a VDIF stream split by thread.
std::string consumer_stream_name(const Runtime& rt, const InterfaceRuntime& ir, std::size_t s);

// The manifest's "consumers": the socket's counters and who is attached.
nlohmann::json consumers_json(const ConsumerService& svc);

// Nothing without a consumers section. Throws std::runtime_error (socket, memory).
Consumers start_consumers(Runtime& rt, spdlog::logger& log);

// Waits until `count` consumers are attached or `timeout` passed (consumers.wait_for): a
// pipeline that must see the run from its first frame attaches before capture starts.
void wait_for_consumers(const Consumers& c, uint64_t count, std::chrono::milliseconds timeout,
                        spdlog::logger& log);

}  // namespace rocecap::daemon
