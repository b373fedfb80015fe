// A trigger request (doc/dumps.md): the JSON a client sends to the trigger socket or the HTTP
// endpoint, parsed and checked on its own (the run-dependent checks are the DumpService's).
//
//   {"start": "2026-11-23T22:40:01.25Z", "end": "2026-11-23T22:40:01.75Z",
//    "antennas": ["ak01"], "groups": ["239.17.0.1:36001"], "label": "frb-123",
//    "token": "..."}
//
// start/end: UTC (ISO 8601, "Z", up to nanoseconds), Unix nanoseconds (an integer), or CODIF
// frame time {"epoch": E, "seconds": S, "frame": F}. The window is [start, end): every frame
// whose time span meets it. antennas, groups: optional (all); label: optional.
//
// "dm" (pc cm^-3, 0 to 100000) makes the window that of a dispersed event: start/end are at
// "ref_freq" (MHz; default the top of the run's band) and each stream's window is shifted by
// the dispersion delay at its own frequencies (dispersion.hpp; needs streams.frequencies).
//
// A status request asks how an accepted dump is doing instead (DumpService::status):
//
//   {"status": 7}            (and "token" for HTTP)
//
// "status": the dump's id, a positive integer; no other key but "token" may come with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rocecap::daemon {

struct TriggerTime {
  bool codif = false;
  int64_t unix_ns = 0;  // when !codif
  uint32_t epoch = 0;   // when codif
  uint32_t seconds = 0;
  uint64_t frame = 0;
};

struct TriggerRequest {
  TriggerTime start, end;
  std::vector<std::string> antennas;  // empty: every antenna
  std::vector<std::string> groups;    // "a.b.c.d:port"; empty: every group
  std::string label;
  std::optional<std::string> token;
  std::optional<double> dm;            // pc cm^-3; none: a flat window
  std::optional<double> ref_freq_mhz;  // only with dm; none: the top of the run's band
};

// {"status": N}: the status and progress of dump N.
struct StatusRequest {
  uint64_t id = 0;
  std::optional<std::string> token;
};

// Why a request was refused: a short reason (a metric label) and a message for the client.
struct TriggerError {
  std::string reason;  // malformed, bad_window, bad_label, unknown_antenna, unknown_group,
                       // too_long, unauthorized, busy, not_running, no_frequencies
  std::string message;
};

using TriggerParse = std::variant<TriggerRequest, TriggerError, StatusRequest>;
// Refuses (`malformed`) what is not one JSON object of the known keys, each given once;
// a StatusRequest when the object has "status" (then only "token" beside it, else `malformed`);
// (`bad_window`) a time no frame can have: before 2000-01-01 (CODIF's first epoch), after what
// int64 Unix nanoseconds hold (2262-04-11), a CODIF epoch above 255 or seconds above 2^32 - 1.
TriggerParse parse_trigger_request(std::string_view body);

// The body as it may be stored or logged (dump.json, the manifest's trigger log): the value of
// "token", and of any key a request does not have (a misspelt "token"), replaced by
// "(redacted)", also in a body that does not parse. A secret is never persisted.
std::string redact_request(std::string_view body);

// Empty when `label` may name a dump directory: 0 to 64 of [A-Za-z0-9._-], not starting with
// '.', no "..": it becomes part of a path. Otherwise what is wrong.
std::string check_label(std::string_view label);

// "2026-11-23T22:40:01.25Z" -> Unix ns; nullopt when not that form.
std::optional<int64_t> parse_utc_ns(std::string_view text);
// Unix ns -> "2026-11-23T22:40:01.250000000Z".
std::string format_utc_ns(int64_t unix_ns);

}  // namespace rocecap::daemon
