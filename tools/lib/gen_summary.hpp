// What `rocecap gen` produced, exactly: the JSON it prints and that every test compares with
// (never hand-typed numbers).
//
// Impairment semantics (each frame index carries at most one impairment; swapped pairs are
// disjoint from every other impairment, both members included):
//   dropped     the frame was never sent
//   swapped     index i listed: frames i and i+1 were sent as i+1 then i
//   duplicated  the frame was sent twice, the copy right after the original
//   bad_sync    the frame was sent with a corrupted sync word (receivers reject it: lost)
//   truncated   the frame was sent with its data cut short (receivers reject it: lost)
//   invalid     the frame was sent intact with the CODIF invalid bit set
//   foreign     an extra copy of the frame was sent from a source address of no stream
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace rocecap::tools {

struct GenFrameParams {
  uint32_t payload_bytes = 8192;
  uint16_t nchan = 1;
  uint8_t nbits = 8;
  bool complex = false;
  uint16_t period = 1;
  uint64_t total_samples = 1'000'000;  // per channel per period
  uint8_t epoch = 0;
  uint32_t start_seconds = 0;  // CODIF seconds of the first frame's period (multiple of period)
  uint32_t start_frame = 0;    // frame number of the first frame within that period
  uint16_t thread_id = 0;      // antenna k's frames carry thread_id + k
  uint16_t group_id = 0;
  std::string station = "RC";  // two ASCII characters
  std::string layout = "v3";   // "v3" (0xFEEDCAFE) or "v1" (0xABADDEED)
  // --format vdif (doc/vdif.md): frames per second, the VTP sequence number, 16-byte legacy
  // headers, and the threads each source sends (empty: thread_id alone).
  std::string format = "codif";  // "codif" or "vdif"
  uint64_t frames_per_second = 0;
  bool vtp = false;
  bool legacy = false;
  std::vector<uint16_t> threads;
  // --tone (tools/lib/tone.hpp): a sinusoid of this many cycles per sample in channel
  // tone_channel of 8-bit payloads; 0: the payload pattern alone.
  double tone = 0;
  uint16_t tone_channel = 0;
};

struct GenStream {
  std::string group;  // dotted quad
  uint16_t port = 0;
  std::string source;        // dotted quad of the antenna's source address
  uint32_t antenna = 0;      // index in the generator's source list: the payload pattern's antenna
  uint16_t thread = 0;       // vdif: the thread id of this stream's frames
  uint64_t first_index = 0;  // absolute CODIF frame index of the first generated frame
  uint64_t frames = 0;       // frame indices first_index .. first_index + frames - 1
  uint64_t datagrams = 0;    // datagrams sent for this stream (foreign copies not included)
  std::vector<uint64_t> dropped, swapped, duplicated, bad_sync, truncated, invalid;
};

struct GenForeign {
  std::string source;
  std::string group;
  uint16_t port = 0;
  std::vector<uint64_t> indices;  // frame indices copied from the stream (group, port, antenna 0)
};

// --pulse-at (tools/lib/pulse.hpp): a dispersed pulse, per group. Sample numbers count from
// the first sample of the run's first frame (0); frame indices are absolute like first_index.
struct GenFrameTime {
  uint32_t seconds = 0;  // the header's seconds field
  uint32_t frame = 0;    // the header's frame number
};

struct GenPulseGroup {
  std::string group;  // dotted quad, as in streams
  uint16_t port = 0;
  double low_mhz = 0, high_mhz = 0;  // the group's band (--frequencies)
  // Per channel: the pulse covers run samples first_sample[c] <= n < end_sample[c]. These are
  // what the payload follows (verify uses them as recorded, not recomputed).
  std::vector<int64_t> first_sample, end_sample;
  uint64_t frames = 0;       // frames holding a pulse sample; 0: none (the rest is then 0)
  uint64_t first_index = 0;  // absolute frame index of the first of them
  uint64_t last_index = 0;   // and of the last
  GenFrameTime first, last;  // their header times
};

struct GenPulse {
  double at = 0;        // seconds after the start of the run's first frame, at ref_mhz
  double width = 0;     // seconds
  double dm = 0;        // pc cm^-3
  double ref_mhz = 0;   // reference frequency of `at`
  int64_t unix_ns = 0;  // Unix time of `at`: the first frame's start + at (rounded to 1 ns)
  std::vector<GenPulseGroup> groups;  // in --groups order
};

struct GenSummary {
  std::string tool = "rocecap gen";
  std::string version;
  std::string output;     // "udp" or "pcap"
  std::string pcap_file;  // with --pcap
  std::string interface;  // with --interface
  uint64_t seed = 0;
  GenFrameParams frame;
  std::optional<GenPulse> pulse;  // null without --pulse-at
  std::vector<GenStream> streams;
  std::vector<GenForeign> foreign;
  uint64_t datagrams = 0;  // everything sent, foreign included
  uint64_t bytes = 0;      // UDP payload bytes sent
  double seconds = 0;      // wall time spent sending
};

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GenFrameParams, payload_bytes, nchan, nbits,
                                                complex, period, total_samples, epoch,
                                                start_seconds, start_frame, thread_id, group_id,
                                                station, layout, format, frames_per_second, vtp,
                                                legacy, threads, tone, tone_channel)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GenStream, group, port, source, antenna, thread,
                                                first_index, frames, datagrams, dropped, swapped,
                                                duplicated, bad_sync, truncated, invalid)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GenForeign, source, group, port, indices)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GenFrameTime, seconds, frame)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GenPulseGroup, group, port, low_mhz, high_mhz,
                                                first_sample, end_sample, frames, first_index,
                                                last_index, first, last)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GenPulse, at, width, dm, ref_mhz, unix_ns, groups)

}  // namespace rocecap::tools

// The summary's optional pulse: null when absent (this nlohmann_json has no std::optional).
template <>
struct nlohmann::adl_serializer<std::optional<rocecap::tools::GenPulse>> {
  static void to_json(json& j, const std::optional<rocecap::tools::GenPulse>& p) {
    if (p) {
      j = *p;
    } else {
      j = nullptr;
    }
  }
  static void from_json(const json& j, std::optional<rocecap::tools::GenPulse>& p) {
    if (j.is_null()) {
      p.reset();
    } else {
      p = j.get<rocecap::tools::GenPulse>();
    }
  }
};

namespace rocecap::tools {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GenSummary, tool, version, output, pcap_file,
                                                interface, seed, frame, pulse, streams, foreign,
                                                datagrams, bytes, seconds)

}  // namespace rocecap::tools
