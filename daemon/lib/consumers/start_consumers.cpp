#include "daemon/lib/consumers/start_consumers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "capture/memory/gpu_memory.hpp"
#include "capture/net/packet.hpp"
#include "config/retention_plan.hpp"

namespace rocecap::daemon {

std::string consumer_stream_name(const Runtime& rt, const InterfaceRuntime& ir, std::size_t s) {
  const config::StreamRef& ref = ir.refs[s];
  const auto& cfg = *rt.config;
  const auto& g = cfg.capture.interfaces[ref.interface].groups[ref.group];
  std::string name = cfg.streams.antennas[ref.antenna].name + "@" +
                     capture::net::format_ipv4(g.address).data() + ":" + std::to_string(g.port);
  if (!cfg.streams.threads.empty()) name += "/t" + std::to_string(cfg.streams.threads[ref.thread]);
  return name;
}

namespace {

const char* format_name(capture::StreamFormat f) {
  switch (f) {
    case capture::StreamFormat::codif:
      return "codif";
    case capture::StreamFormat::vdif:
      return "vdif";
    case capture::StreamFormat::udp:
      return "udp";
  }
  return "udp";
}

bool offered(const config::ConsumersSection& c, const std::string& name,
             const std::string& antenna) {
  if (c.streams.empty()) return true;
  return std::any_of(c.streams.begin(), c.streams.end(),
                     [&](const std::string& n) { return n == name || n == antenna; });
}

// GPU payload slabs are offered as a CUDA IPC handle of their allocation and the slab's offset
// in it; where the device cannot export one, consumers of the stream get headers only (said).
void offer_gpu_slab(const capture::StreamRing& ring, ConsumerStream& cs, spdlog::logger& log) {
  const auto* gpu = dynamic_cast<const capture::memory::GpuMemory*>(&ring.payload_memory());
  if (gpu == nullptr) return;
  std::string why;
  cs.cuda_ipc = capture::memory::ipc_handle_hex(gpu->allocation(), gpu->device(), why);
  cs.cuda_offset = gpu->offset();
  cs.gpu_device = gpu->device();
  if (cs.cuda_ipc.empty())
    log.warn(
        "consumers: stream {}: its GPU payload slab cannot be shared ({}); consumers get "
        "its headers and descriptors only",
        cs.name, why);
}

}  // namespace

nlohmann::json consumers_json(const ConsumerService& svc) {
  const auto c = svc.counters();
  nlohmann::json j{{"socket", svc.path()},
                   {"connections", c->connections.get()},
                   {"attached_total", c->attached.get()},
                   {"refused", c->refused.get()},
                   {"dropped", c->detached.get()},
                   {"attached", nlohmann::json::array()}};
  for (const ConsumerSnapshot& s : svc.snapshot()) {
    nlohmann::json streams = nlohmann::json::array();
    for (const auto& p : s.streams)
      streams.push_back(
          {{"stream", p.stream}, {"read", p.read}, {"missed", p.missed}, {"lag", p.lag}});
    j["attached"].push_back(
        {{"name", s.name}, {"mode", s.mode}, {"pid", s.pid}, {"streams", std::move(streams)}});
  }
  return j;
}

Consumers start_consumers(Runtime& rt, spdlog::logger& log) {
  Consumers out;
  const config::RunConfig& cfg = *rt.config;
  if (!cfg.consumers.enabled) return out;
  writers::ConsumerLogOptions lo;
  lo.log_capacity = static_cast<uint32_t>(config::consumer_log_frames(cfg));
  lo.fill_gaps = cfg.output.fill_gaps;
  std::vector<ConsumerStream> streams;
  uint32_t index = 0;
  for (auto& ir : rt.interfaces) {
    for (std::size_t s = 0; s < ir->streams.size(); ++s, ++index) {
      capture::StreamPipeline& sp = *ir->streams[s];
      const std::string name = consumer_stream_name(rt, *ir, s);
      const std::string& antenna = cfg.streams.antennas[ir->refs[s].antenna].name;
      if (!offered(cfg.consumers, name, antenna)) continue;
      out.logs.push_back(std::make_unique<writers::ConsumerLog>(sp, lo));
      if (ir->writer) ir->writer->set_consumer_log(s, out.logs.back().get());
      ConsumerStream cs;
      cs.index = index;
      cs.name = name;
      cs.antenna = antenna;
      cs.format = format_name(sp.spec().format);
      cs.log = out.logs.back().get();
      cs.retention = sp.retention.get();
      offer_gpu_slab(sp.ring(), cs, log);
      streams.push_back(std::move(cs));
    }
  }
  ConsumerServiceOptions o;
  o.socket = cfg.consumers.socket;
  o.group = cfg.consumers.group;
  o.max_consumers = cfg.consumers.max_consumers;
  o.hold_frames = config::consumer_hold_frames(cfg);
  o.hold_time = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.consumers.hold_time);
  o.log = [&log](bool warning, const std::string& line) {
    if (warning) {
      log.warn("{}", line);
    } else {
      log.info("{}", line);
    }
  };
  const std::size_t n = streams.size();
  out.service = std::make_unique<ConsumerService>(std::move(o), std::move(streams));
  const ConsumerService* svc = out.service.get();
  rt.consumer_status = [svc] {
    const auto c = svc->counters();
    return fmt::format("rocecap_consumers {} attached, {} refused, {} dropped", c->open.get(),
                       c->refused.get(), c->detached.get());
  };
  rt.consumer_log = [svc] { return consumers_json(*svc); };
  log.info(
      "consumers: {} stream(s) offered on {} (mode 0660), {} frames kept per stream, log of {} "
      "frames, at most {} consumers, hold bound {} frames / {} ms",
      n, cfg.consumers.socket, config::plan_retention(cfg).keep_frames, lo.log_capacity,
      cfg.consumers.max_consumers, config::consumer_hold_frames(cfg),
      std::chrono::duration_cast<std::chrono::milliseconds>(cfg.consumers.hold_time).count());
  return out;
}

void wait_for_consumers(const Consumers& c, uint64_t count, std::chrono::milliseconds timeout,
                        spdlog::logger& log) {
  if (!c.service || count == 0) return;
  log.info("consumers: waiting up to {} ms for {} consumer(s) before capture starts",
           timeout.count(), count);
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (c.service->counters()->open.get() < count && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const uint64_t open = c.service->counters()->open.get();
  if (open < count) {
    log.warn("consumers: {} of {} consumer(s) attached after {} ms; capture starts anyway", open,
             count, timeout.count());
  } else {
    log.info("consumers: {} attached; capture starts", open);
  }
}

}  // namespace rocecap::daemon
