// A run continued after its process ended without stopping it (systemd's Restart=on-failure
// after a crash) or started again on a finished run directory. Each start is an *attempt*; the
// manifest stays the record of the whole run:
//   - "attempt": this attempt's number (1 for a run never restarted);
//   - "attempts": one summary per attempt (started, stopped, state, failure, recovery), oldest
//     first, the current one last;
//   - streams and interfaces: counters summed over the attempts, gap lists and file lists
//     concatenated (each file tagged with its "attempt"), first_frame from the first attempt
//     that had one and last_frame from the latest; the frames a stream missed between its last
//     frame before the restart and its first frame after it are a gap like any other, also
//     counted in "lost_in_restarts";
//   - "started": the first attempt's start; "recovery" moves into its attempt's summary;
//   - "targets" (several output targets): this attempt's list, with earlier attempts' targets
//     it lacks appended; each earlier file's "target" re-pointed at its directory's index.
#pragma once

#include <nlohmann/json.hpp>

namespace rocecap::rundir {

// `previous`: the run's manifest before this attempt (final or recovered); `current`: this
// attempt's own manifest; `attempt`: this attempt's number. Returns the run's manifest.
nlohmann::json merge_attempts(const nlohmann::json& previous, const nlohmann::json& current,
                              int attempt);

// The number the next attempt on a run directory with manifest `previous` gets (1 when null).
int next_attempt(const nlohmann::json& previous);

}  // namespace rocecap::rundir
