#include "tests/integration/capture_check.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "capture/net/packet.hpp"
#include "tools/lib/payload_pattern.hpp"

namespace rocecap::itest {
namespace {

uint32_t ipv4_or_throw(const std::string& text, const char* what) {
  uint32_t addr = 0;
  if (!capture::net::parse_ipv4(text, addr)) {
    throw std::invalid_argument(std::string("summary: ") + what + " '" + text +
                                "' is not a dotted-quad IPv4 address");
  }
  return addr;
}

std::string ip(uint32_t addr) {
  return capture::net::format_ipv4(addr).data();
}

std::string flow_name(const std::string& group, uint16_t port, const std::string& source) {
  return group + ":" + std::to_string(port) + " from " + source;
}

uint32_t load_le32(std::span<const std::byte> b, std::size_t at) {
  uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v |= uint32_t{std::to_integer<uint8_t>(b[at + i])} << (8 * i);
  return v;
}

uint32_t load_be32(std::span<const std::byte> b, std::size_t at) {
  uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i)
    v = (v << 8) | std::to_integer<uint8_t>(b[at + i]);
  return v;
}

uint16_t load_be16(std::span<const std::byte> b, std::size_t at) {
  return static_cast<uint16_t>((std::to_integer<uint8_t>(b[at]) << 8) |
                               std::to_integer<uint8_t>(b[at + 1]));
}

std::set<uint64_t> to_set(const std::vector<uint64_t>& v, const std::string& list,
                          const tools::GenStream& s) {
  std::set<uint64_t> out(v.begin(), v.end());
  const uint64_t end = s.first_index + s.frames;
  for (uint64_t i : out) {
    if (i < s.first_index || i >= end || (list == "swapped" && i + 1 >= end)) {
      throw std::invalid_argument("summary: stream " + flow_name(s.group, s.port, s.source) + ": " +
                                  list + " index " + std::to_string(i) + " outside its frames");
    }
  }
  return out;
}

// Multiset difference a - b, as "index(kind)" strings, at most `limit` of them.
std::vector<std::string> missing_from(std::vector<SentDatagram> a, std::vector<SentDatagram> b,
                                      std::size_t limit, std::size_t& total) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<SentDatagram> diff;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(diff));
  total = diff.size();
  std::vector<std::string> out;
  for (std::size_t i = 0; i < diff.size() && i < limit; ++i) {
    out.push_back(std::to_string(diff[i].index) + "(" + std::string(to_string(diff[i].as)) + ")");
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

std::string_view to_string(SentAs s) noexcept {
  switch (s) {
    case SentAs::intact:
      return "intact";
    case SentAs::invalid:
      return "invalid";
    case SentAs::bad_sync:
      return "bad_sync";
    case SentAs::truncated:
      return "truncated";
    case SentAs::count_:
      break;
  }
  return "?";
}

std::vector<SentDatagram> expected_sequence(const tools::GenStream& s) {
  const auto dropped = to_set(s.dropped, "dropped", s);
  const auto swapped = to_set(s.swapped, "swapped", s);
  const auto duplicated = to_set(s.duplicated, "duplicated", s);
  const auto bad_sync = to_set(s.bad_sync, "bad_sync", s);
  const auto truncated = to_set(s.truncated, "truncated", s);
  const auto invalid = to_set(s.invalid, "invalid", s);

  std::map<uint64_t, int> marks;  // frame index -> impairments naming it
  for (const auto* set : {&dropped, &duplicated, &bad_sync, &truncated, &invalid}) {
    for (uint64_t i : *set)
      ++marks[i];
  }
  for (uint64_t i : swapped)
    ++marks[i], ++marks[i + 1];
  for (const auto& [index, n] : marks) {
    if (n > 1) {
      throw std::invalid_argument("summary: stream " + flow_name(s.group, s.port, s.source) +
                                  ": frame " + std::to_string(index) +
                                  " has more than one impairment");
    }
  }

  std::vector<SentDatagram> seq;
  seq.reserve(s.frames + duplicated.size());
  const uint64_t end = s.first_index + s.frames;
  for (uint64_t i = s.first_index; i < end; ++i) {
    if (dropped.count(i)) continue;
    if (swapped.count(i)) {
      seq.push_back({i + 1, SentAs::intact});
      seq.push_back({i, SentAs::intact});
      ++i;
      continue;
    }
    SentAs as = SentAs::intact;
    if (bad_sync.count(i)) as = SentAs::bad_sync;
    if (truncated.count(i)) as = SentAs::truncated;
    if (invalid.count(i)) as = SentAs::invalid;
    seq.push_back({i, as});
    if (duplicated.count(i)) seq.push_back({i, as});
  }
  return seq;
}

// The first generated frame's header: everything but the frame position is constant.
static capture::codif::Header first_header(const tools::GenFrameParams& p, uint32_t antenna,
                                           const capture::codif::Header& free_fields) {
  capture::codif::Header h = free_fields;
  h.layout = p.layout == "v1" ? capture::codif::Layout::v1 : capture::codif::Layout::v3;
  h.sync =
      h.layout == capture::codif::Layout::v1 ? capture::codif::kSyncV1 : capture::codif::kSyncV3;
  // doc/codif.md: the current layout's Version field is 3; the v1 version is taken from the data.
  if (h.layout == capture::codif::Layout::v3) h.version = 3;
  h.epoch = p.epoch;
  h.nbits = p.nbits;
  h.complex = p.complex;
  h.invalid = false;
  h.period = p.period;
  h.thread_id = static_cast<uint16_t>(p.thread_id + antenna);
  h.group_id = p.group_id;
  h.station_id = p.station.size() == 2 ? capture::codif::station_id(p.station[0], p.station[1]) : 0;
  h.nchan = p.nchan;
  h.data_words = p.payload_bytes / 8;
  h.total_samples = p.total_samples;
  h.seconds = p.start_seconds;
  h.frame = p.start_frame;
  return h;
}

capture::codif::Timing frame_timing(const tools::GenFrameParams& p) {
  const capture::codif::Header h = first_header(p, 0, capture::codif::Header{});
  capture::codif::Timing t;
  const capture::codif::Invalid v = capture::codif::validate(h, h.frame_bytes(), t);
  if (v != capture::codif::Invalid::ok) {
    throw std::invalid_argument("summary: frame parameters break the CODIF rules: " +
                                std::string(capture::codif::to_string(v)));
  }
  if (p.payload_bytes % 8 != 0) {
    throw std::invalid_argument("summary: frame.payload_bytes is not a multiple of 8");
  }
  return t;
}

capture::codif::Header expected_header(const tools::GenFrameParams& p, uint32_t antenna,
                                       uint64_t index, const capture::codif::Header& free_fields) {
  return capture::codif::at_index(first_header(p, antenna, free_fields), frame_timing(p), index);
}

std::string header_difference(const capture::codif::Header& got,
                              const capture::codif::Header& want) {
  std::ostringstream out;
  auto field = [&](const char* name, auto g, auto w) {
    if (g == w) return;
    out << (out.tellp() > 0 ? "; " : "") << name << ": got " << +g << ", expected " << +w;
  };
  field("layout", static_cast<int>(got.layout), static_cast<int>(want.layout));
  field("sync", got.sync, want.sync);
  field("frame", got.frame, want.frame);
  field("seconds", got.seconds, want.seconds);
  field("epoch", got.epoch, want.epoch);
  field("nbits", got.nbits, want.nbits);
  field("atypical", got.atypical, want.atypical);
  field("invalid", got.invalid, want.invalid);
  field("complex", got.complex, want.complex);
  field("cal", got.cal, want.cal);
  field("representation", got.representation, want.representation);
  field("version", got.version, want.version);
  field("protocol", got.protocol, want.protocol);
  field("period", got.period, want.period);
  field("thread_id", got.thread_id, want.thread_id);
  field("group_id", got.group_id, want.group_id);
  field("secondary_id", got.secondary_id, want.secondary_id);
  field("station_id", got.station_id, want.station_id);
  field("nchan", got.nchan, want.nchan);
  field("block_length", got.block_length, want.block_length);
  field("data_words", got.data_words, want.data_words);
  field("total_samples", got.total_samples, want.total_samples);
  field("metadata_id", got.metadata_id, want.metadata_id);
  field("metadata[0]", got.metadata[0], want.metadata[0]);
  field("metadata[1]", got.metadata[1], want.metadata[1]);
  return out.str();
}

std::vector<uint32_t> igmp_joined_groups(std::span<const std::byte> frame) {
  capture::net::UdpFrame f;
  // parse_udp validates Ethernet/VLAN/IPv4 and stops at the protocol: IGMP reads not_udp.
  if (capture::net::parse_udp(frame, f) != capture::net::ParseError::not_udp) return {};
  // parse_udp fills no offsets for a non-UDP frame: skip the (already checked) VLAN tags here.
  const std::size_t ip_offset =
      capture::net::kEthHeaderBytes + f.vlan_count * capture::net::kVlanTagBytes;
  const auto ip_hdr = frame.subspan(ip_offset);
  if (ip_hdr.size() < capture::net::kIpv4MinHeaderBytes ||
      std::to_integer<uint8_t>(ip_hdr[9]) != capture::net::kIpProtoIgmp) {
    return {};
  }
  const std::size_t ihl = (std::to_integer<uint8_t>(ip_hdr[0]) & 0x0F) * 4u;
  const std::size_t total = load_be16(ip_hdr, 2);
  if (ihl < capture::net::kIpv4MinHeaderBytes || total < ihl + 8 || total > ip_hdr.size())
    return {};
  const auto igmp = ip_hdr.subspan(ihl, total - ihl);
  const uint8_t type = std::to_integer<uint8_t>(igmp[0]);
  if (type == 0x16) return {load_be32(igmp, 4)};
  if (type != 0x22) return {};
  std::vector<uint32_t> groups;
  const std::size_t records = load_be16(igmp, 6);
  std::size_t at = 8;
  for (std::size_t r = 0; r < records && at + 8 <= igmp.size(); ++r) {
    const uint8_t rtype = std::to_integer<uint8_t>(igmp[at]);
    const std::size_t aux_words = std::to_integer<uint8_t>(igmp[at + 1]);
    const std::size_t sources = load_be16(igmp, at + 2);
    // RFC 3376 record types: 2 MODE_IS_EXCLUDE, 4 CHANGE_TO_EXCLUDE join any source;
    // 1 MODE_IS_INCLUDE, 5 ALLOW_NEW join named sources (an empty include list is a leave).
    const bool join = rtype == 2 || rtype == 4 || ((rtype == 1 || rtype == 5) && sources > 0);
    if (join) groups.push_back(load_be32(igmp, at + 4));
    at += 8 + 4 * sources + 4 * aux_words;
  }
  return groups;
}

CaptureChecker::CaptureChecker(tools::GenSummary summary) : summary_(std::move(summary)) {
  if (summary_.frame.layout != "v3" && summary_.frame.layout != "v1") {
    throw std::invalid_argument("summary: frame.layout '" + summary_.frame.layout +
                                "' is neither v3 nor v1");
  }
  if (summary_.frame.station.size() != 2) {
    throw std::invalid_argument("summary: frame.station '" + summary_.frame.station +
                                "' is not two characters");
  }
  timing_ = frame_timing(summary_.frame);
  if (summary_.streams.empty()) throw std::invalid_argument("summary: no streams");
  for (const auto& s : summary_.streams) {
    Flow f;
    f.tally.name =
        flow_name(s.group, s.port, s.source) + " (antenna " + std::to_string(s.antenna) + ")";
    f.antenna = s.antenna;
    f.first_index = s.first_index;
    f.frames = s.frames;
    f.expected = expected_sequence(s);
    f.tally.expected = f.expected.size();
    f.tally.dropped = s.dropped.size();
    f.tally.duplicated = s.duplicated.size();
    f.tally.swapped = s.swapped.size();
    const uint32_t group = ipv4_or_throw(s.group, "stream group");
    const FlowKey key{group, s.port, ipv4_or_throw(s.source, "stream source")};
    if (!by_key_.emplace(key, flows_.size()).second) {
      throw std::invalid_argument("summary: stream " + f.tally.name + " listed twice");
    }
    if (std::find(groups_.begin(), groups_.end(), group) == groups_.end()) {
      groups_.push_back(group);
    }
    flows_.push_back(std::move(f));
  }
  for (const auto& fo : summary_.foreign) {
    const auto origin = std::find_if(
        summary_.streams.begin(), summary_.streams.end(), [&](const tools::GenStream& s) {
          return s.group == fo.group && s.port == fo.port && s.antenna == 0;
        });
    if (origin == summary_.streams.end()) {
      throw std::invalid_argument("summary: foreign copies of " + fo.group + ":" +
                                  std::to_string(fo.port) + " have no antenna-0 stream");
    }
    Flow f;
    f.tally.name = flow_name(fo.group, fo.port, fo.source) + " (foreign copies of antenna 0)";
    f.antenna = 0;
    f.first_index = origin->first_index;
    f.frames = origin->frames;
    for (uint64_t i : fo.indices)
      f.expected.push_back({i, SentAs::intact});
    f.tally.expected = f.expected.size();
    const FlowKey key{ipv4_or_throw(fo.group, "foreign group"), fo.port,
                      ipv4_or_throw(fo.source, "foreign source")};
    if (!by_key_.emplace(key, flows_.size()).second) {
      throw std::invalid_argument("summary: foreign source " + fo.source +
                                  " is also a stream source");
    }
    flows_.push_back(std::move(f));
  }
}

void CaptureChecker::error(std::string message) {
  ++error_count_;
  if (errors_.size() < kMaxErrors) errors_.push_back(std::move(message));
}

void CaptureChecker::add_frame(std::span<const std::byte> frame) {
  ++frames_;
  const std::string where = "frame #" + std::to_string(frames_) + ": ";
  capture::net::UdpFrame f;
  const capture::net::ParseError pe = capture::net::parse_udp(frame, f);
  if (pe == capture::net::ParseError::not_udp) {
    add_igmp(frame);
    return;
  }
  if (pe != capture::net::ParseError::ok) {
    error(where + "not a whole IPv4/UDP frame (" + std::string(capture::net::to_string(pe)) + ")");
    return;
  }
  const auto it = by_key_.find({f.dst_ip, f.dst_port, f.src_ip});
  if (it == by_key_.end()) {
    error(where + "datagram " + ip(f.src_ip) + " -> " + ip(f.dst_ip) + ":" +
          std::to_string(f.dst_port) + " belongs to no stream of the summary");
    return;
  }
  if (f.dst_mac != capture::net::multicast_mac(f.dst_ip)) {
    error(where + "destination MAC is not the multicast MAC of " + ip(f.dst_ip));
  }
  add_datagram(flows_[it->second], frame.subspan(f.payload_offset, f.payload_bytes));
}

void CaptureChecker::add_igmp(std::span<const std::byte> frame) {
  const auto groups = igmp_joined_groups(frame);
  if (groups.empty()) return;  // other IGMP (queries, leaves): not what this check is about
  ++igmp_reports_;
  for (uint32_t g : groups) {
    if (std::find(joined_.begin(), joined_.end(), g) == joined_.end()) joined_.push_back(g);
  }
}

// Decodes with the standard sync words; failing that, with whatever word sits where the
// configured layout keeps its sync, so a frame sent with a corrupted sync is still identified.
bool CaptureChecker::decode_any_sync(std::span<const std::byte> payload, capture::codif::Header& h,
                                     SentAs& as) {
  as = SentAs::intact;
  if (capture::codif::decode(payload, capture::codif::SyncSet::defaults(), h)) return true;
  const bool v1 = summary_.frame.layout == "v1";
  capture::codif::SyncSet any;
  any.add(load_le32(payload, v1 ? 44 : 40),
          v1 ? capture::codif::Layout::v1 : capture::codif::Layout::v3);
  as = SentAs::bad_sync;
  return capture::codif::decode(payload, any, h);
}

void CaptureChecker::add_datagram(Flow& flow, std::span<const std::byte> payload) {
  const std::string where = "frame #" + std::to_string(frames_) + " (" + flow.tally.name + "): ";
  if (payload.size() < capture::codif::kHeaderBytes) {
    error(where + "UDP payload of " + std::to_string(payload.size()) +
          " bytes is shorter than a CODIF header");
    return;
  }
  capture::codif::Header got;
  SentAs as = SentAs::intact;
  if (!decode_any_sync(payload, got, as)) {
    error(where + "CODIF header does not decode even with its own sync word");
    return;
  }
  if (!have_free_fields_) {
    free_fields_ = got;
    have_free_fields_ = true;
  }
  as = classify(got, as, payload.size(), where);
  const uint64_t index = capture::codif::absolute_index(got, timing_);
  if (index < flow.first_index || index >= flow.first_index + flow.frames) {
    error(where + "frame index " + std::to_string(index) + " outside the generated range");
  }
  check_contents(flow, got, as, index, payload, where);
  flow.received.push_back({index, as});
}

// What happened to a decoded frame, from how a receiver judges it: a bad sync must be the
// only fault of its frame; a truncated frame must fail on its size alone.
SentAs CaptureChecker::classify(const capture::codif::Header& got, SentAs decoded_as,
                                std::size_t udp_payload_bytes, const std::string& where) {
  capture::codif::Timing t;
  const capture::codif::Invalid v = capture::codif::validate(got, udp_payload_bytes, t);
  const std::size_t full_bytes = capture::codif::kHeaderBytes + summary_.frame.payload_bytes;
  if (decoded_as == SentAs::bad_sync) {
    if (v != capture::codif::Invalid::ok) {
      error(where +
            "bad-sync frame also fails validation: " + std::string(capture::codif::to_string(v)));
    }
    return SentAs::bad_sync;
  }
  if (v == capture::codif::Invalid::size_mismatch && udp_payload_bytes < full_bytes) {
    return SentAs::truncated;
  }
  if (v != capture::codif::Invalid::ok) {
    error(where +
          "frame rejected for an unexpected reason: " + std::string(capture::codif::to_string(v)));
  }
  return got.invalid ? SentAs::invalid : SentAs::intact;
}

// Header fields against what gen writes for (antenna, index), payload against the pattern.
void CaptureChecker::check_contents(const Flow& flow, const capture::codif::Header& got, SentAs as,
                                    uint64_t index, std::span<const std::byte> payload,
                                    const std::string& where) {
  capture::codif::Header want = expected_header(summary_.frame, flow.antenna, index, free_fields_);
  if (as == SentAs::bad_sync) {
    if (got.sync == want.sync) error(where + "sync word intact but decoding failed");
    want.sync = got.sync;
  }
  want.invalid = as == SentAs::invalid;
  if (const std::string d = header_difference(got, want); !d.empty()) {
    error(where + "index " + std::to_string(index) + " header differs: " + d);
  }
  const auto data = payload.subspan(capture::codif::kHeaderBytes);
  const std::size_t bad = tools::first_pattern_mismatch(flow.antenna, index, 0, data);
  if (bad != data.size()) {
    error(where + "index " + std::to_string(index) + " payload byte " + std::to_string(bad) +
          " differs from the pattern of antenna " + std::to_string(flow.antenna));
  }
}

void CaptureChecker::check_flow(const Flow& flow, CheckResult& r) const {
  auto fail = [&r](std::string m) {
    ++r.error_count;
    if (r.errors.size() < kMaxErrors) r.errors.push_back(std::move(m));
  };
  FlowTally t = flow.tally;
  t.received = flow.received.size();
  for (const auto& d : flow.received)
    ++t.by_kind[static_cast<std::size_t>(d.as)];
  t.matches = flow.received == flow.expected;
  r.flows.push_back(t);
  if (t.matches) return;
  std::size_t n_missing = 0, n_extra = 0;
  const auto missing = missing_from(flow.expected, flow.received, 8, n_missing);
  const auto extra = missing_from(flow.received, flow.expected, 8, n_extra);
  const std::string name = flow.tally.name + ": ";
  if (n_missing > 0) {
    fail(name + std::to_string(n_missing) + " sent datagram(s) missing from the capture: " +
         join(missing) + (n_missing > missing.size() ? " ..." : ""));
  }
  if (n_extra > 0) {
    fail(name + std::to_string(n_extra) + " captured datagram(s) the summary does not list: " +
         join(extra) + (n_extra > extra.size() ? " ..." : ""));
  }
  if (n_missing == 0 && n_extra == 0) {
    const auto [e, g] =
        std::mismatch(flow.expected.begin(), flow.expected.end(), flow.received.begin());
    fail(name + "same datagrams in a different order: at position " +
         std::to_string(e - flow.expected.begin()) + " got index " + std::to_string(g->index) +
         ", expected " + std::to_string(e->index));
  }
}

CheckResult CaptureChecker::finish() const {
  CheckResult r;
  r.errors = errors_;
  r.error_count = error_count_;
  r.frames = frames_;
  r.igmp_reports = igmp_reports_;
  auto fail = [&r](std::string m) {
    ++r.error_count;
    if (r.errors.size() < kMaxErrors) r.errors.push_back(std::move(m));
  };
  uint64_t implied = 0;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    check_flow(flows_[i], r);
    implied += flows_[i].expected.size();
    if (i < summary_.streams.size() && summary_.streams[i].datagrams != flows_[i].expected.size()) {
      fail("summary inconsistent: " + flows_[i].tally.name + " says " +
           std::to_string(summary_.streams[i].datagrams) + " datagrams, its lists imply " +
           std::to_string(flows_[i].expected.size()));
    }
  }
  if (implied != summary_.datagrams) {
    fail("summary inconsistent: datagrams " + std::to_string(summary_.datagrams) +
         ", streams and foreign copies imply " + std::to_string(implied));
  }
  for (uint32_t g : groups_) {
    r.groups_expected.push_back(ip(g));
    if (std::find(joined_.begin(), joined_.end(), g) != joined_.end()) {
      r.groups_joined.push_back(ip(g));
    } else {
      fail("no IGMP membership report (v2 0x16 or v3 0x22 join) for group " + ip(g) +
           " in the capture");
    }
  }
  return r;
}

std::string CheckResult::report() const {
  std::ostringstream out;
  out << "capture: " << frames << " frames, " << igmp_reports << " IGMP membership reports\n";
  for (const auto& f : flows) {
    out << "  " << f.name << ": " << f.received << "/" << f.expected << " datagrams"
        << (f.matches ? " exactly as sent" : " NOT as sent") << " [";
    for (std::size_t k = 0; k < kSentAsCount; ++k) {
      out << (k ? ", " : "") << f.by_kind[k] << " " << to_string(static_cast<SentAs>(k));
    }
    if (f.dropped || f.duplicated || f.swapped) {
      out << "; summary: " << f.dropped << " dropped, " << f.duplicated << " duplicated, "
          << f.swapped << " swapped pairs";
    }
    out << "]\n";
  }
  out << "  IGMP joins seen for " << groups_joined.size() << "/" << groups_expected.size()
      << " groups:";
  for (const auto& g : groups_joined)
    out << " " << g;
  out << "\n";
  for (const auto& e : errors)
    out << "ERROR: " << e << "\n";
  if (error_count > errors.size()) {
    out << "ERROR: ... and " << (error_count - errors.size()) << " more\n";
  }
  out << (ok() ? "OK: capture matches the generator summary byte for byte\n"
               : "FAILED: " + std::to_string(error_count) + " mismatch(es)\n");
  return out.str();
}

}  // namespace rocecap::itest
