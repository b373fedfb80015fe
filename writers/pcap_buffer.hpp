// The staging buffer of an interface's pcap file. One pcap file carries every stream of its
// interface, where raw output has a file per stream, each with its own buffer: with O_DIRECT
// the writes a file has in flight (kUringDepth buffers) are what a disk stall fills before the
// writer stops draining the rings, so one pcap file with one stream's buffer absorbed six
// times less of a stall than six raw files (BENCHMARKS.md, "A pcap backlog released as it is
// written"). Its buffer is therefore the sum of the streams' buffers, at most kPcapBufferStreams
// of them (64 MiB in flight at 1 MiB each). Buffered files keep the base size: the page cache
// is their buffer, and a small buffer stays in the CPU cache between the copies and write().
#pragma once

#include <algorithm>
#include <cstddef>

namespace rocecap::writers {

inline constexpr std::size_t kPcapBufferStreams = 16;

constexpr std::size_t pcap_buffer_bytes(std::size_t per_stream, std::size_t streams,
                                        bool direct) noexcept {
  if (!direct) return per_stream;
  return per_stream * std::clamp<std::size_t>(streams, 1, kPcapBufferStreams);
}

}  // namespace rocecap::writers
