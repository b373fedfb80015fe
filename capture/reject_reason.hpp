// Why a received frame was not placed in any stream: one flat, stable list, so one counter
// array per interface covers every reason and every reason has a metric/manifest label.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "capture/codif/header.hpp"
#include "capture/net/packet.hpp"
#include "capture/vdif/header.hpp"

namespace rocecap::capture {

// [0, kParseErrorCount): net::ParseError (ok unused); then frames of no configured stream;
// then codif::Invalid (ok unused); then capture-side reasons.
inline constexpr std::size_t kRejectNoStream = net::kParseErrorCount;
inline constexpr std::size_t kRejectCodifBase = kRejectNoStream + 1;
inline constexpr std::size_t kRejectOversize = kRejectCodifBase + codif::kInvalidCount;
inline constexpr std::size_t kRejectSnapTruncated = kRejectOversize + 1;
// A UDP payload shorter than a CODIF header (64 bytes) on a codif stream.
inline constexpr std::size_t kRejectShortPayload = kRejectSnapTruncated + 1;
// A frame off its stream's timeline that no following frames confirmed (Sequencer, resync).
inline constexpr std::size_t kRejectTimelineOutlier = kRejectShortPayload + 1;
// VDIF streams' reasons (vdif::Invalid, ok unused), after every older one so their labels and
// indices stay put.
inline constexpr std::size_t kRejectVdifBase = kRejectTimelineOutlier + 1;
// A frame that starts before run.start (Ingest::set_start): not part of the run.
inline constexpr std::size_t kRejectBeforeStart = kRejectVdifBase + vdif::kInvalidCount;
inline constexpr std::size_t kRejectReasonCount = kRejectBeforeStart + 1;

constexpr std::size_t reject_index(net::ParseError e) noexcept {
  return static_cast<std::size_t>(e);
}
constexpr std::size_t reject_index(codif::Invalid v) noexcept {
  return kRejectCodifBase + static_cast<std::size_t>(v);
}
constexpr std::size_t reject_index(vdif::Invalid v) noexcept {
  return kRejectVdifBase + static_cast<std::size_t>(v);
}

// Label for reason i ("bad_sync", "no_stream", "oversize", ...); empty for unused slots.
std::string_view reject_name(std::size_t i) noexcept;

}  // namespace rocecap::capture
