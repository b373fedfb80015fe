// ConsumerLog: one stream's time-ordered descriptor log for consumer processes
// (doc/consumers.md), written by the writer thread in the order and with the fill frames of
// the raw file, in shared memory consumers map read-only.
//
// The control memory (a memfd, consumer/client/rocecap_consumer.hpp abi::ControlHeader) holds
// the stream's geometry, one generation per ring slot (StreamRing::set_generations: release()
// bumps it) and a ring of abi::Descriptor. Consumers never hold anything: a slot is reused
// when the writer (or retention) releases it, whatever a consumer is doing, and the generation
// tells the consumer afterwards whether what it read was still that frame. So an attached
// consumer costs the capture thread nothing and the writer thread one 128-byte descriptor per
// frame (a hold-mode consumer is the exception, bounded by capture/retention.hpp pins).
//
// Frames whose payload a zero-copy source lent (a kernel ring block) are taken home into their
// own payload slot first (StreamRing::take_home): a consumer can map the slab, not the
// kernel's ring.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "capture/memory/host_memory.hpp"
#include "capture/stream_pipeline.hpp"
#include "consumer/client/rocecap_consumer.hpp"

namespace rocecap::writers {

struct ConsumerLogOptions {
  uint32_t log_capacity = 1u << 16;  // descriptors, a power of two
  bool fill_gaps = true;             // as output.fill_gaps: fill frames as the raw file has them
};

class ConsumerLog {
 public:
  // Start-up: maps the control memory and hands the ring its generations. Throws
  // std::invalid_argument (capacity) or std::system_error (memory).
  ConsumerLog(capture::StreamPipeline& stream, const ConsumerLogOptions& options);
  ConsumerLog(const ConsumerLog&) = delete;
  ConsumerLog& operator=(const ConsumerLog&) = delete;

  // Writer thread: the slots it has written this pass, in written order, before they are
  // released or retained; `first_retention_pos` is the retention position of ids[0] (0 without
  // retention). Per frame: no allocation, no lock, no system call.
  void publish(std::span<const capture::SlotId> ids, uint64_t first_retention_pos) noexcept;
  // After the last publish(): consumers see the stream end once they have read everything.
  void end() noexcept;

  uint64_t published() const noexcept;  // descriptors so far (any thread)
  const capture::memory::HostMemory& control() const noexcept { return control_; }
  const capture::StreamPipeline& stream() const noexcept { return stream_; }

 private:
  consumer::abi::Descriptor* next_descriptor() noexcept;
  void commit(consumer::abi::Descriptor* d) noexcept;
  void publish_codif(capture::SlotId id, uint64_t retention_pos) noexcept;
  void publish_vdif(capture::SlotId id, uint64_t retention_pos) noexcept;
  void publish_udp(capture::SlotId id, uint64_t retention_pos) noexcept;
  void frame(capture::SlotId id, uint64_t retention_pos, std::size_t data_at,
             std::span<const std::byte> header) noexcept;

  capture::StreamPipeline& stream_;
  ConsumerLogOptions options_;
  capture::memory::HostMemory control_;
  consumer::abi::ControlHeader* header_;
  consumer::abi::Descriptor* log_;
  uint64_t pos_ = 0;
  bool started_ = false;
  uint64_t last_index_ = 0;
};

}  // namespace rocecap::writers
