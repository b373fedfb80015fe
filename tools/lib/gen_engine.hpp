// The generator's engine, free of sockets and files: it walks every stream's frame positions
// in round-robin time order, applies the impairment plan, builds the datagrams in batches
// stamped with their scheduled send time, hands each batch to a sink (UDP sockets or a pcap
// file), and records in the summary exactly what the sink accepted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tools/lib/gen_frame.hpp"
#include "tools/lib/gen_plan.hpp"
#include "tools/lib/gen_summary.hpp"

namespace rocecap::tools {

struct GroupAddress {
  uint32_t ip = 0;  // host byte order
  uint16_t port = 0;
};

struct GenSetup {
  std::vector<GroupAddress> groups;  // group g: pulse group g (FrameBuilder::set_pulse)
  std::vector<uint32_t> sources;     // antenna k = sources[k]
  std::optional<uint32_t> foreign;   // source address of the foreign copies
  uint64_t frames_per_stream = 0;
  double rate_per_stream = 10000;  // frames per second
  uint64_t seed = 0;
  ImpairmentRates rates;
};

// One datagram of a batch. `sender` is the antenna index, or sources.size() for the foreign
// source. `payload` points into the engine's batch buffers, valid during the sink call.
struct OutDatagram {
  uint32_t sender = 0;
  uint32_t src_ip = 0;
  uint32_t dst_ip = 0;
  uint16_t dst_port = 0;
  int64_t offset_ns = 0;  // scheduled send time after the start of the run
  std::span<const std::byte> payload;
};

class DatagramSink {
 public:
  virtual ~DatagramSink() = default;
  // Sends (or writes) the whole batch, in order per sender, not before its scheduled time
  // unless `stop` is raised (then at once: what was built is always delivered, so the summary
  // stays exact). Throws std::runtime_error on a failure that ends the run.
  virtual void deliver(std::span<const OutDatagram> batch, const std::atomic<bool>& stop) = 0;
  // After the last batch: flush and close, throwing when that fails (a full disk).
  virtual void finish() {}
};

// --gbps: the per-stream frame rate that makes all streams together carry `gbps` Gbit/s of
// UDP payload (CODIF header included).
double frames_per_second_for_gbps(double gbps, std::size_t frame_bytes,
                                  std::size_t streams) noexcept;

// Datagrams per batch: about a millisecond of traffic, between 1 and kMaxBatch.
inline constexpr std::size_t kMaxBatch = 64;
std::size_t batch_size_for(double datagrams_per_second) noexcept;

// Runs the generator. Stops after frames_per_stream positions of every stream, or soon after
// `stop` is raised (the positions begun are completed, a pending swap partner included).
// Fills summary.streams, foreign, datagrams and bytes; the caller fills the rest. Exceptions
// from the sink propagate after the summary holds what was delivered before.
void run_generator(const GenSetup& setup, const FrameBuilder& frames, DatagramSink& sink,
                   const std::atomic<bool>& stop, GenSummary& summary);

}  // namespace rocecap::tools
