// Checks a real capture of `rocecap gen` traffic against the generator's own summary.
//
// The summary (tools/lib/gen_summary.hpp) says exactly what was put on the wire: per stream the
// frame range and which frames were dropped, swapped, duplicated, sent with a bad sync word,
// truncated, or flagged invalid, plus the foreign copies. From it this checker derives the
// datagram sequence every stream must show, the header every frame must carry and (through the
// payload pattern) every payload byte, then compares them with what a real client captured.
// Nothing is compared with hand-typed numbers.
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "capture/codif/header.hpp"
#include "tools/lib/gen_summary.hpp"

namespace rocecap::itest {

// How a datagram left the generator, as far as a receiver can tell.
enum class SentAs : uint8_t {
  intact,     // a valid frame
  invalid,    // intact, CODIF invalid bit set (receivers keep it, counted)
  bad_sync,   // corrupted sync word: receivers reject it (bad_sync)
  truncated,  // data cut short: receivers reject it (size_mismatch)
  count_
};
inline constexpr std::size_t kSentAsCount = static_cast<std::size_t>(SentAs::count_);
std::string_view to_string(SentAs s) noexcept;

struct SentDatagram {
  uint64_t index = 0;  // absolute CODIF frame index
  SentAs as = SentAs::intact;
  auto operator<=>(const SentDatagram&) const = default;
};

// Every datagram stream `s` must have sent, in send order: frames first_index.. in order,
// dropped ones left out, each swapped pair reversed, duplicates twice in a row.
// Throws std::invalid_argument when the summary's lists contradict each other.
std::vector<SentDatagram> expected_sequence(const tools::GenStream& s);

// The timing implied by the generator's frame parameters; throws std::invalid_argument naming
// the CODIF rule they break.
capture::codif::Timing frame_timing(const tools::GenFrameParams& p);

// The header gen writes for frame `index` of antenna `antenna` (thread id = thread_id +
// antenna). Fields the summary does not determine (atypical, cal, representation, protocol,
// secondary id, sample block length, metadata; the version of the v1 layout) are copied from
// `free_fields`: the checker takes them from the first frame and requires them constant.
capture::codif::Header expected_header(const tools::GenFrameParams& p, uint32_t antenna,
                                       uint64_t index, const capture::codif::Header& free_fields);

// "field: got X, expected Y" for every field that differs; empty when the headers are equal.
std::string header_difference(const capture::codif::Header& got,
                              const capture::codif::Header& want);

// Groups (host order) that one Ethernet frame reports joined, when it is an IGMPv2 (0x16)
// membership report or an IGMPv3 (0x22) report with join records; empty otherwise.
std::vector<uint32_t> igmp_joined_groups(std::span<const std::byte> frame);

// What one flow (a summary stream, or one foreign source's copies) showed in the capture.
struct FlowTally {
  std::string name;
  uint64_t expected = 0;  // datagrams the summary implies
  uint64_t received = 0;
  std::array<uint64_t, kSentAsCount> by_kind{};
  uint64_t dropped = 0, duplicated = 0, swapped = 0;  // from the summary, for the report
  bool matches = false;                               // received sequence == expected sequence
};

struct CheckResult {
  std::vector<FlowTally> flows;
  std::vector<std::string> errors;  // the first kMaxErrors, each a full sentence
  uint64_t error_count = 0;
  uint64_t frames = 0;
  uint64_t igmp_reports = 0;
  std::vector<std::string> groups_joined;
  std::vector<std::string> groups_expected;

  bool ok() const noexcept { return error_count == 0; }
  std::string report() const;  // human-readable, several lines, ends with OK or FAILED
};

class CaptureChecker {
 public:
  static constexpr std::size_t kMaxErrors = 40;

  // Throws std::invalid_argument when the summary is unusable (bad addresses, bad params).
  explicit CaptureChecker(tools::GenSummary summary);

  // One captured Ethernet frame, in capture order (whole frame, not cut by a snaplen).
  void add_frame(std::span<const std::byte> frame);

  CheckResult finish() const;

 private:
  struct Flow {
    FlowTally tally;
    uint32_t antenna = 0;  // payload pattern / thread id offset
    uint64_t first_index = 0, frames = 0;
    std::vector<SentDatagram> expected;
    std::vector<SentDatagram> received;
  };
  using FlowKey = std::tuple<uint32_t, uint16_t, uint32_t>;  // group, port, source

  void error(std::string message);
  void add_igmp(std::span<const std::byte> frame);
  void add_datagram(Flow& flow, std::span<const std::byte> payload);
  bool decode_any_sync(std::span<const std::byte> payload, capture::codif::Header& h, SentAs& as);
  SentAs classify(const capture::codif::Header& got, SentAs decoded_as,
                  std::size_t udp_payload_bytes, const std::string& where);
  void check_contents(const Flow& flow, const capture::codif::Header& got, SentAs as,
                      uint64_t index, std::span<const std::byte> payload, const std::string& where);
  void check_flow(const Flow& flow, CheckResult& r) const;

  tools::GenSummary summary_;
  capture::codif::Timing timing_{};
  std::vector<Flow> flows_;
  std::map<FlowKey, std::size_t> by_key_;
  std::vector<uint32_t> groups_;
  std::vector<uint32_t> joined_;
  bool have_free_fields_ = false;
  capture::codif::Header free_fields_{};
  uint64_t frames_ = 0;
  uint64_t igmp_reports_ = 0;
  std::vector<std::string> errors_;
  uint64_t error_count_ = 0;
};

}  // namespace rocecap::itest
