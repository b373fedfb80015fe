#include "config/run_config.hpp"

#include <algorithm>

#include "config/packet_ring_geometry.hpp"

namespace rocecap::config {

std::string_view to_string(Backend v) noexcept {
  switch (v) {
    case Backend::verbs:
      return "verbs";
    case Backend::pcap:
      return "pcap";
    case Backend::pcap_file:
      return "pcap-file";
  }
  return "?";
}

std::string_view to_string(PayloadMemory v) noexcept {
  switch (v) {
    case PayloadMemory::automatic:
      return "auto";
    case PayloadMemory::host:
      return "host";
    case PayloadMemory::gpu:
      return "gpu";
  }
  return "?";
}

std::string_view to_string(PollMode v) noexcept {
  return v == PollMode::busy_poll ? "busy_poll" : "event";
}

std::string_view to_string(ReplayPace v) noexcept {
  return v == ReplayPace::fast ? "fast" : "recorded";
}

std::string_view to_string(PcapReader v) noexcept {
  return v == PcapReader::libpcap ? "libpcap" : "packet_ring";
}

std::string_view to_string(StreamFormat v) noexcept {
  switch (v) {
    case StreamFormat::codif:
      return "codif";
    case StreamFormat::udp:
      return "udp";
    case StreamFormat::vdif:
      return "vdif";
  }
  return "?";
}

std::string_view to_string(CodifLayout v) noexcept {
  return v == CodifLayout::v3 ? "v3" : "v1";
}

std::string_view to_string(OutputFormat v) noexcept {
  switch (v) {
    case OutputFormat::raw:
      return "raw";
    case OutputFormat::codifhdr:
      return "codifhdr";
    case OutputFormat::pcap:
      return "pcap";
    case OutputFormat::vdifhdr:
      return "vdifhdr";
  }
  return "?";
}

std::string_view to_string(LogLevel v) noexcept {
  switch (v) {
    case LogLevel::trace:
      return "trace";
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warn:
      return "warn";
    case LogLevel::error:
      return "error";
    case LogLevel::critical:
      return "critical";
    case LogLevel::off:
      return "off";
  }
  return "?";
}

std::string_view to_string(Sideband v) noexcept {
  return v == Sideband::upper ? "upper" : "lower";
}

std::vector<StreamRef> enumerate_streams(const RunConfig& config) {
  std::vector<StreamRef> out;
  const auto& interfaces = config.capture.interfaces;
  for (std::size_t i = 0; i < interfaces.size(); ++i) {
    for (std::size_t g = 0; g < interfaces[i].groups.size(); ++g) {
      for (std::size_t a = 0; a < config.streams.antennas.size(); ++a) {
        const std::size_t threads = std::max<std::size_t>(1, config.streams.threads.size());
        for (std::size_t t = 0; t < threads; ++t)
          out.push_back(StreamRef{i, g, a, t});
      }
    }
  }
  return out;
}

uint64_t interface_streams(const RunConfig& config, std::size_t i) noexcept {
  return uint64_t{config.capture.interfaces[i].groups.size()} * config.streams.antennas.size() *
         std::max<std::size_t>(1, config.streams.threads.size());
}

uint64_t count_streams(const RunConfig& config) noexcept {
  uint64_t n = 0;
  for (std::size_t i = 0; i < config.capture.interfaces.size(); ++i)
    n += interface_streams(config, i);
  return n;
}

uint64_t interface_kernel_ring_bytes(const RunConfig& config, std::size_t i) noexcept {
  const CaptureSection& c = config.capture;
  if (c.backend != Backend::pcap || c.pcap_reader != PcapReader::packet_ring) return 0;
  // Only host-memory payload slots are lent (a GPU ring copies): payload auto is host memory
  // on the pcap backend.
  const bool lends = c.zero_copy && c.payload_memory != PayloadMemory::gpu;
  const uint64_t frames = lends ? interface_streams(config, i) * c.ring_depth : 0;
  return packet_ring_bytes(frames, c.max_frame);
}

uint64_t kernel_ring_bytes(const RunConfig& config) noexcept {
  uint64_t bytes = 0;
  for (std::size_t i = 0; i < config.capture.interfaces.size(); ++i)
    bytes += interface_kernel_ring_bytes(config, i);
  return bytes;
}

bool has_format(const OutputSection& output, OutputFormat format) noexcept {
  return std::find(output.formats.begin(), output.formats.end(), format) != output.formats.end();
}

std::optional<FrequencyRange> stream_frequencies(const RunConfig& config, const StreamRef& ref) {
  const GroupConfig& g = config.capture.interfaces[ref.interface].groups[ref.group];
  const std::optional<uint16_t> thread =
      config.streams.threads.empty() ? std::nullopt
                                     : std::optional<uint16_t>(config.streams.threads[ref.thread]);
  const GroupFrequencies* found = nullptr;
  for (const GroupFrequencies& f : config.streams.frequencies) {
    if (f.address != g.address || f.port != g.port) continue;
    if (f.thread && f.thread == thread) return FrequencyRange{f.low_mhz, f.high_mhz};
    if (!f.thread) found = &f;
  }
  if (!found) return std::nullopt;
  return FrequencyRange{found->low_mhz, found->high_mhz};
}

std::optional<double> top_of_band_mhz(const RunConfig& config) noexcept {
  std::optional<double> top;
  for (const GroupFrequencies& f : config.streams.frequencies)
    top = std::max(top.value_or(0), f.high_mhz);
  return top;
}

}  // namespace rocecap::config
