// nic-wallclock: the NIC's PHC mapped to CLOCK_REALTIME (nic_clock.hpp). The capture thread
// pairs a completion with a host clock read now and then and converts each completion with
// the published map; the async event thread fits the map, detects the value encoding and says
// what the offset looks like (TAI, UTC, free-running).
#include <cmath>
#include <cstdlib>

#include "capture/verbs/qp_state.hpp"
#include "capture/verbs/verbs_source.hpp"

namespace rocecap::capture::verbs {
namespace {

// A sample this far from the current map means the PHC was stepped (ptp4l's first step to
// TAI, a settime): the fit starts over instead of averaging across the step for 16 s.
constexpr int64_t kClockStepNs = StampFloor::kClockStepNs;
// Smaller differences between the published map and a new fit are slewed, not stepped: the
// published map turns towards the fitted line so as to meet it this far ahead, re-aimed on
// every turn of the async thread. Stepping would move timestamps back by the sampling noise
// (up to a few hundred us on a loaded host) whenever a new sample lowers the line.
constexpr int64_t kSlewNs = 1'000'000'000;

}  // namespace

// Called once per polled batch, right after ibv_start_poll found its first completion.
int64_t VerbsSource::batch_now() noexcept {
  if (time_source_ == TimeSource::software) return wall_ns();
  if (time_source_ == TimeSource::nic_raw_clock) return 0;
  // The host time pairs with the batch's first completion when the slow path wants samples,
  // and stands in for the NIC's time until the first offset is known.
  sample_next_ = samples_.wanted();
  return sample_next_ || !nic_offset_known_.load(std::memory_order_acquire) ? wall_ns() : 0;
}

int64_t VerbsSource::completion_time(int64_t now_ns, uint32_t& flags) noexcept {
  ibv_cq_ex* cq = cq_.get();
  switch (time_source_) {
    case TimeSource::software:
      return now_ns;
    case TimeSource::nic_raw_clock:
      flags = kSlotHwTimestamp;
      return clock_.to_ns(ibv_wc_read_completion_ts(cq));
    case TimeSource::nic_wallclock:
      break;
  }
  const uint64_t v = ibv_wc_read_completion_wallclock_ns(cq);
  const ClockMap m = clock_.load();  // acquire: the encoding was stored before the first map
  const auto enc = static_cast<WallclockEncoding>(encoding_.load(std::memory_order_relaxed));
  if (sample_next_) {
    sample_next_ = false;
    samples_.offer(v, now_ns, enc);
  }
  if (m.mult == 0)
    return stamp_floor_.apply(now_ns);  // no offset measured yet: host time, not NIC's
  flags = kSlotHwTimestamp;
  return stamp_floor_.apply(m.to_ns(decode_wallclock(v, enc)));
}

std::optional<double> VerbsSource::nic_clock_offset_seconds() const noexcept {
  if (!nic_offset_known_.load(std::memory_order_acquire)) return std::nullopt;
  return static_cast<double>(nic_offset_ns_.load(std::memory_order_relaxed)) / 1e9;
}

// Async event thread, every turn (at least every 100 ms).
void VerbsSource::refresh_wallclock() {
  uint64_t v = 0;
  int64_t host = 0;
  if (samples_.take(v, host)) {
    auto enc = wallclock_encoding();
    if (enc == WallclockEncoding::unknown) {
      enc = detect_encoding(v, host);
      encoding_.store(static_cast<int>(enc), std::memory_order_relaxed);
    }
    const uint64_t nic = decode_wallclock(v, enc);
    if (fit_->samples() != 0 && std::llabs(fitted_.to_ns(nic) - host) > kClockStepNs) {
      fit_.emplace(nic_ns_fit());
    }
    fit_->add(nic, host);
    fitted_ = fit_->map();
    steer_wallclock();  // published before the offset counts as known (batch_now)
    const ClockMap& m = fitted_;
    const auto offset = static_cast<int64_t>(m.base_ticks - static_cast<uint64_t>(m.base_ns));
    nic_offset_ns_.store(offset, std::memory_order_relaxed);
    nic_offset_known_.store(true, std::memory_order_release);
    // The first sample is a single batch's: wait for one taken over several before saying.
    if (fit_->samples() >= 2) report_offset(static_cast<double>(offset) / 1e9);
    next_sample_ns_ = monotonic_ns() + kClockRefreshNs;
  } else if (fitted_.mult != 0) {
    steer_wallclock();
  }
  if (!samples_.pending() && monotonic_ns() >= next_sample_ns_) {
    samples_.request(nic_offset_known_.load(std::memory_order_relaxed) ? kWallclockSampleBatches
                                                                       : 1);
  }
}

// Publishes a map that continues the current one at the NIC's present time and meets the
// fitted line kSlewNs later, or the fitted line itself for a first map or a step.
void VerbsSource::steer_wallclock() noexcept {
  const ClockMap old = clock_.load();
  const int64_t host_now = wall_ns();
  const uint64_t nic_now = fitted_.base_ticks + static_cast<uint64_t>(host_now - fitted_.base_ns);
  const int64_t from = old.to_ns(nic_now);
  if (old.mult == 0 || std::llabs(fitted_.to_ns(nic_now) - from) > kClockStepNs) {
    return clock_.publish(fitted_);
  }
  const int64_t to = fitted_.to_ns(nic_now + kSlewNs);
  const double slope = static_cast<double>(to - from) / static_cast<double>(kSlewNs);
  clock_.publish(
      {nic_now, from, static_cast<uint64_t>(std::ldexp(slope, ClockMap::kShift)), fitted_.mask});
}

// Logged once, and again when what the offset looks like changes.
void VerbsSource::report_offset(double offset_s) {
  const OffsetClass c = classify_offset(offset_s, logged_class_ ? &*logged_class_ : nullptr);
  if (logged_class_ && *logged_class_ == c) return;
  logged_class_ = c;
  if (on_event_) {
    on_event_("RDMA device " + device_ + " (" + interface_ + "): " + describe_offset(offset_s, c),
              false);
  }
}

}  // namespace rocecap::capture::verbs
