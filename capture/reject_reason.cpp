#include "capture/reject_reason.hpp"

namespace rocecap::capture {

std::string_view reject_name(std::size_t i) noexcept {
  if (i == reject_index(net::ParseError::ok) || i == reject_index(codif::Invalid::ok)) return {};
  if (i < net::kParseErrorCount) return net::to_string(static_cast<net::ParseError>(i));
  if (i == kRejectNoStream) return "no_stream";
  if (i < kRejectOversize)
    return codif::to_string(static_cast<codif::Invalid>(i - kRejectCodifBase));
  if (i == kRejectOversize) return "oversize";                 // frame larger than a slot
  if (i == kRejectSnapTruncated) return "snap_truncated";      // captured shorter than on the wire
  if (i == kRejectShortPayload) return "short_payload";        // under 64 bytes: no CODIF header
  if (i == kRejectTimelineOutlier) return "timeline_outlier";  // an unconfirmed resync
  if (i == reject_index(vdif::Invalid::ok)) return {};
  if (i == kRejectBeforeStart) return "before_start";  // before run.start
  if (i < kRejectReasonCount)
    return vdif::to_string(static_cast<vdif::Invalid>(i - kRejectVdifBase));
  return {};
}

}  // namespace rocecap::capture
