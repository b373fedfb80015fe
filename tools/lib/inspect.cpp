#include "tools/lib/inspect.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "capture/net/packet.hpp"
#include "capture/vdif/timeline.hpp"
#include "tools/lib/pcap_file.hpp"

namespace rocecap::tools {
namespace {

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw std::runtime_error(file + ": " + what);
}

// A read-only mapping of a whole file.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      fail(path, std::strerror(err));
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data_ == MAP_FAILED) {
        const int err = errno;
        ::close(fd);
        fail(path, std::strerror(err));
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (size_ > 0) ::munmap(data_, size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const std::byte> bytes() const noexcept {
    return {static_cast<const std::byte*>(data_), size_};
  }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

uint32_t load32(const std::byte* p, bool swap) noexcept {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swap ? __builtin_bswap32(v) : v;
}

std::string dotted(uint32_t ip) {
  return capture::net::format_ipv4(ip).data();
}

// Sequencing of one frame into its stream: counts now, gaps and first/last at finish().
void add_frame(InspectStream& s, const capture::codif::Header& h, const capture::codif::Timing& t) {
  if (!s.first_header) {
    s.first_header = h;
    s.timing = t;
  }
  const uint64_t index = capture::codif::absolute_index(h, t);
  ++s.frames;
  if (h.invalid) ++s.invalid;
  if (!s.indices.empty() && index < s.highest) ++s.late;
  if (s.indices.empty() || index > s.highest) s.highest = index;
  s.indices.push_back(index);
}

// The CODIF part of a record: a frame, or one reason for rejecting it.
void add_codif(InspectStream& s, std::span<const std::byte> payload, std::size_t payload_bytes) {
  ++s.records;
  capture::codif::Header h;
  if (payload.size() < capture::codif::kHeaderBytes) {
    ++s.rejected["short_payload"];
    return;
  }
  if (!capture::codif::decode(payload, capture::codif::SyncSet::defaults(), h)) {
    ++s.rejected[std::string(capture::codif::to_string(capture::codif::Invalid::bad_sync))];
    return;
  }
  capture::codif::Timing t;
  const capture::codif::Invalid why = capture::codif::validate(h, payload_bytes, t);
  if (why != capture::codif::Invalid::ok) {
    ++s.rejected[std::string(capture::codif::to_string(why))];
    return;
  }
  add_frame(s, h, t);
}

void finish(InspectStream& s) {
  std::vector<uint64_t>& v = s.indices;
  std::sort(v.begin(), v.end());
  const auto end = std::unique(v.begin(), v.end());
  s.unique_frames = static_cast<uint64_t>(end - v.begin());
  s.duplicates = s.frames - s.unique_frames;
  if (s.unique_frames > 0) {
    s.first_index = v.front();
    s.last_index = *(end - 1);
    s.first_time_ns = capture::codif::frame_start_unix_ns(
        capture::codif::at_index(*s.first_header, s.timing, s.first_index), s.timing);
    s.last_time_ns = capture::codif::frame_start_unix_ns(
        capture::codif::at_index(*s.first_header, s.timing, s.last_index), s.timing);
    for (auto it = v.begin(); it + 1 < end; ++it) {
      if (it[1] > it[0] + 1) {
        s.gaps.emplace_back(it[0] + 1, it[1] - it[0] - 1);
        s.missing += it[1] - it[0] - 1;
      }
    }
  }
  v.clear();
  v.shrink_to_fit();
}

struct PcapKey {
  uint32_t group, source;
  uint16_t port;
  uint16_t thread;  // VDIF payloads: the header's thread id (one flow may carry several); else 0
  bool operator<(const PcapKey& o) const noexcept {
    return std::tie(group, port, source, thread) < std::tie(o.group, o.port, o.source, o.thread);
  }
};

// How a pcap's UDP payloads are read: CODIF frames, or VDIF frames at a frame rate (not in
// VDIF headers), each preceded by an 8-byte VTP sequence number with `vtp`.
struct PayloadRead {
  uint64_t vdif_frames_per_second = 0;  // 0: CODIF
  bool vtp = false;
};

// What one pcap file's records turned out to be, to say so when they are not what was asked.
struct PcapTally {
  uint64_t datagrams = 0;  // UDP datagrams whole in the capture
  uint64_t frames = 0;     // read as a valid frame
  uint64_t vdif_like = 0;  // refused as CODIF, but a self-consistent VDIF frame
  uint64_t vtp_like = 0;   // ... of them, behind an 8-byte VTP number
};

// A payload whose VDIF length field (x 8 bytes) is exactly the payload, at offset 0 or behind
// an 8-byte VTP number, with a VDIF version (0 or 1): with no sync word, that is what tells a
// VDIF frame. Returns the offset (0 or 8), or -1.
int vdif_offset(std::span<const std::byte> payload) {
  for (const std::size_t skip : {std::size_t{0}, capture::vdif::kVtpBytes}) {
    capture::vdif::Header h;
    if (payload.size() <= skip || !capture::vdif::decode(payload.subspan(skip), h)) continue;
    if (h.version <= capture::vdif::kMaxVersion && h.frame_bytes() > h.header_bytes() &&
        h.frame_bytes() == payload.size() - skip)
      return static_cast<int>(skip);
  }
  return -1;
}

void finish_all(InspectReport& r) {
  for (auto& s : r.streams)
    finish(s);
  for (auto& s : r.streams) {
    if (s.first_header && !s.group.empty()) {
      s.station_id = s.first_header->station_id;
      s.thread_id = s.first_header->thread_id;  // a VDIF stream's is its key's
      s.group_id = s.first_header->group_id;
    }
  }
}

}  // namespace

// Where each stream of a report is, across the files added (one map per kind of file).
struct InspectSlots {
  std::map<PcapKey, std::size_t> pcap;
  std::map<std::tuple<uint16_t, uint16_t, uint16_t>, std::size_t> codif;
  std::map<std::pair<uint16_t, uint16_t>, std::size_t> vdif;
};

namespace {

InspectStream& pcap_stream(InspectReport& r, std::map<PcapKey, std::size_t>& slot,
                           const capture::net::UdpFrame& u, uint16_t thread) {
  const PcapKey key{u.dst_ip, u.src_ip, u.dst_port, thread};
  auto [it, fresh] = slot.try_emplace(key, r.streams.size());
  if (fresh) {
    InspectStream s;
    s.group = dotted(u.dst_ip);
    s.port = u.dst_port;
    s.source = dotted(u.src_ip);
    s.thread_id = thread;
    r.streams.push_back(std::move(s));
  }
  return r.streams[it->second];
}

// A datagram's VDIF frame: its thread's stream, then validated and sequenced as the capture
// does (capture/frame_check_vdif.cpp). No header: a record of no stream.
void add_vdif_datagram(InspectReport& r, std::map<PcapKey, std::size_t>& slot,
                       const capture::net::UdpFrame& u, std::span<const std::byte> payload,
                       const PayloadRead& how, PcapTally& tally) {
  namespace vdif = capture::vdif;
  const std::size_t skip = how.vtp ? vdif::kVtpBytes : 0;
  vdif::Header h;
  if (payload.size() < skip || !vdif::decode(payload.subspan(skip), h)) {
    ++r.rejected[std::string(vdif::to_string(payload.size() < skip ? vdif::Invalid::vtp_missing
                                                                   : vdif::Invalid::short_header))];
    return;
  }
  InspectStream& s = pcap_stream(r, slot, u, h.thread_id);
  ++s.records;
  vdif::Timing t;
  const vdif::Invalid why = vdif::validate(h, payload.size() - skip,
                                           {.frames_per_second = how.vdif_frames_per_second}, t);
  if (why != vdif::Invalid::ok) {
    ++s.rejected[std::string(vdif::to_string(why))];
    return;
  }
  capture::codif::Header view;
  capture::codif::Timing view_t;
  vdif::sequencer_view(h, t, view, view_t);
  add_frame(s, view, view_t);
  ++tally.frames;
}

// One UDP datagram of a pcap, read as the payloads are asked to be read.
void add_datagram(InspectReport& r, std::map<PcapKey, std::size_t>& slot,
                  const capture::net::UdpFrame& u, std::span<const std::byte> frame,
                  const PayloadRead& how, PcapTally& tally) {
  const std::size_t have = frame.size() > u.payload_offset ? frame.size() - u.payload_offset : 0;
  if (have < u.payload_bytes) {  // snapped capture: the frame is not all there
    InspectStream& s = pcap_stream(r, slot, u, 0);
    ++s.records;
    ++s.rejected["snapped"];
    return;
  }
  ++tally.datagrams;
  const auto payload = frame.subspan(u.payload_offset, u.payload_bytes);
  if (how.vdif_frames_per_second != 0) return add_vdif_datagram(r, slot, u, payload, how, tally);
  InspectStream& s = pcap_stream(r, slot, u, 0);
  const uint64_t frames = s.frames;
  add_codif(s, payload, u.payload_bytes);
  if (s.frames != frames) {
    ++tally.frames;
    return;
  }
  const int offset = vdif_offset(payload);
  if (offset >= 0) ++tally.vdif_like;
  if (offset > 0) ++tally.vtp_like;
}

// Not one CODIF frame, and VDIF frames instead: reading on would report every record
// bad_sync, which says nothing about the file.
void refuse_vdif_as_codif(const std::string& name, const PcapTally& t) {
  if (t.frames != 0 || t.vdif_like == 0) return;
  fail(name,
       "its UDP payloads are VDIF frames (" + std::to_string(t.vdif_like) + " of " +
           std::to_string(t.datagrams) +
           " datagrams), not CODIF: give --vdif FPS (VDIF headers do not carry the frame "
           "rate)" +
           (t.vtp_like != 0 ? " and --vtp (each starts with an 8-byte VTP sequence number)" : ""));
}

void pcap_into(InspectReport& r, std::map<PcapKey, std::size_t>& slot,
               std::span<const std::byte> file, const std::string& name, const PayloadRead& how) {
  if (file.size() < 24) fail(name, "shorter than a pcap file header");
  const uint32_t magic = load32(file.data(), false);
  const bool swap =
      magic == __builtin_bswap32(kPcapMagicNanos) || magic == __builtin_bswap32(kPcapMagicMicros);
  const uint32_t m = swap ? __builtin_bswap32(magic) : magic;
  if (m != kPcapMagicNanos && m != kPcapMagicMicros) fail(name, "not a pcap file (magic)");
  if (r.precision.empty()) r.precision = m == kPcapMagicNanos ? "ns" : "us";
  const uint32_t linktype = load32(file.data() + 20, swap) & 0xFFFF;
  if (linktype != kLinktypeEthernet) {
    fail(name, "link type " + std::to_string(linktype) + " is not Ethernet (1)");
  }
  PcapTally tally;
  std::size_t off = 24;
  while (off < file.size()) {
    if (file.size() - off < 16)
      fail(name, "record header cut short at offset " + std::to_string(off));
    const uint32_t incl = load32(file.data() + off + 8, swap);
    const uint32_t orig = load32(file.data() + off + 12, swap);
    if (incl > file.size() - off - 16) {
      fail(name, "record at offset " + std::to_string(off) + " runs past the end of the file");
    }
    const std::span<const std::byte> frame = file.subspan(off + 16, incl);
    off += 16 + incl;
    ++r.records;
    capture::net::UdpFrame u;
    const capture::net::ParseError e =
        capture::net::parse_udp(frame, std::max<std::size_t>(orig, incl), u);
    if (e != capture::net::ParseError::ok) {
      ++r.rejected[std::string(capture::net::to_string(e))];
      continue;
    }
    add_datagram(r, slot, u, frame, how, tally);
  }
  if (how.vdif_frames_per_second == 0) refuse_vdif_as_codif(name, tally);
}

void codif_into(InspectReport& r,
                std::map<std::tuple<uint16_t, uint16_t, uint16_t>, std::size_t>& slot,
                std::span<const std::byte> file, const std::string& name) {
  capture::codif::Header first;
  if (!capture::codif::decode(file, capture::codif::SyncSet::defaults(), first)) {
    fail(name, "neither a pcap file nor a CODIF file (no CODIF sync word at offset 0)");
  }
  const uint64_t frame_bytes = first.frame_bytes();
  if (first.data_words == 0) fail(name, "first CODIF header has a zero data array length");
  for (std::size_t off = 0; off < file.size(); off += frame_bytes) {
    ++r.records;
    if (file.size() - off < frame_bytes) {
      ++r.rejected["partial_frame"];
      break;
    }
    const auto frame = file.subspan(off, frame_bytes);
    capture::codif::Header h;
    if (!capture::codif::decode(frame, capture::codif::SyncSet::defaults(), h)) {
      ++r.rejected["bad_sync"];
      continue;
    }
    auto [it, fresh] = slot.try_emplace({h.station_id, h.group_id, h.thread_id}, r.streams.size());
    if (fresh) {
      InspectStream s;
      s.station_id = h.station_id;
      s.group_id = h.group_id;
      s.thread_id = h.thread_id;
      r.streams.push_back(std::move(s));
    }
    add_codif(r.streams[it->second], frame, frame.size());
  }
}

// A raw VDIF file (doc/vdif.md): frames at the stride of each header's length field, streams by
// (station, thread), sequenced in the CODIF model with a one-second period (vdif/timeline.hpp).
void vdif_into(InspectReport& r, std::map<std::pair<uint16_t, uint16_t>, std::size_t>& slot,
               std::span<const std::byte> file, uint64_t frames_per_second) {
  const capture::vdif::Rate rate{.frames_per_second = frames_per_second};
  for (std::size_t off = 0; off < file.size();) {
    ++r.records;
    capture::vdif::Header h;
    if (!capture::vdif::decode(file.subspan(off), h) || h.frame_bytes() <= h.header_bytes() ||
        file.size() - off < h.frame_bytes()) {
      ++r.rejected["partial_frame"];  // nothing tells where the next frame starts
      break;
    }
    const auto frame = file.subspan(off, h.frame_bytes());
    off += frame.size();
    auto [it, fresh] = slot.try_emplace({h.station_id, h.thread_id}, r.streams.size());
    if (fresh) {
      InspectStream s;
      s.station_id = h.station_id;
      s.thread_id = h.thread_id;
      r.streams.push_back(std::move(s));
    }
    InspectStream& s = r.streams[it->second];
    ++s.records;
    capture::vdif::Timing t;
    const capture::vdif::Invalid why = capture::vdif::validate(h, frame.size(), rate, t);
    if (why != capture::vdif::Invalid::ok) {
      ++s.rejected[std::string(capture::vdif::to_string(why))];
      continue;
    }
    capture::codif::Header view;
    capture::codif::Timing view_t;
    capture::vdif::sequencer_view(h, t, view, view_t);
    add_frame(s, view, view_t);
  }
}

bool is_pcap(std::span<const std::byte> bytes) {
  if (bytes.size() < 4) return false;
  const uint32_t magic = load32(bytes.data(), false);
  for (uint32_t m : {kPcapMagicNanos, kPcapMagicMicros}) {
    if (magic == m || magic == __builtin_bswap32(m)) return true;
  }
  return false;
}

}  // namespace

InspectReport inspect_pcap_bytes(std::span<const std::byte> file, const std::string& name) {
  InspectReport r{name, "pcap", "", "codif", 0, {}, {}};
  InspectSlots slots;
  pcap_into(r, slots.pcap, file, name, {});
  finish_all(r);
  return r;
}

InspectReport inspect_codif_bytes(std::span<const std::byte> file, const std::string& name) {
  InspectReport r{name, "codif", "", "", 0, {}, {}};
  InspectSlots slots;
  codif_into(r, slots.codif, file, name);
  finish_all(r);
  return r;
}

InspectReport inspect_file(const std::string& path, uint64_t vdif_frames_per_second, bool vtp) {
  InspectAccumulator acc(path);
  acc.add_file(path, vdif_frames_per_second, vtp);
  return acc.finish();
}

InspectAccumulator::InspectAccumulator(std::string name)
    : report_{std::move(name), "", "", "", 0, {}, {}}, slots_(std::make_unique<InspectSlots>()) {}
InspectAccumulator::~InspectAccumulator() = default;

void InspectAccumulator::add_file(const std::string& path, uint64_t vdif_frames_per_second,
                                  bool vtp) {
  MappedFile f(path);
  const auto bytes = f.bytes();
  // One report holds one kind of file: the first decides, a later one of another kind is refused.
  // A pcap is a pcap whatever its payloads (--vdif says how to read them).
  const std::string kind = is_pcap(bytes) ? "pcap" : vdif_frames_per_second != 0 ? "vdif" : "codif";
  if (report_.format.empty()) report_.format = kind;
  if (kind != report_.format) fail(path, "a " + kind + " file among " + report_.format + " files");
  if (kind == "vdif") {
    vdif_into(report_, slots_->vdif, bytes, vdif_frames_per_second);
  } else if (kind == "pcap") {
    report_.payload = vdif_frames_per_second != 0 ? "vdif" : "codif";
    pcap_into(report_, slots_->pcap, bytes, path, {vdif_frames_per_second, vtp});
  } else {
    codif_into(report_, slots_->codif, bytes, path);
  }
  ++files_;
}

InspectReport InspectAccumulator::finish() {
  finish_all(report_);
  return std::move(report_);
}

}  // namespace rocecap::tools
