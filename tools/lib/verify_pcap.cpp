#include "tools/lib/verify_pcap.hpp"

#include <pcap/pcap.h>

#include <memory>

namespace rocecap::tools {
namespace {

struct PcapCloser {
  void operator()(pcap_t* p) const noexcept { pcap_close(p); }
};
using Pcap = std::unique_ptr<pcap_t, PcapCloser>;

struct Stamp {
  int64_t sec = 0, nsec = 0;
  bool operator<(const Stamp& o) const noexcept {
    return sec != o.sec ? sec < o.sec : nsec < o.nsec;
  }
};

std::string at(const ListedFile& f, uint64_t record) {
  return f.name + " record " + std::to_string(record);
}

}  // namespace

PcapFilesResult check_pcap_files(const std::vector<ListedFile>& files,
                                 const PcapRecordCheck& check) {
  PcapFilesResult r;
  Stamp last;
  for (const ListedFile& f : files) {
    char err[PCAP_ERRBUF_SIZE] = {};
    const Pcap p(
        pcap_open_offline_with_tstamp_precision(f.path.c_str(), PCAP_TSTAMP_PRECISION_NANO, err));
    if (!p) {
      r.problem = f.name + ": libpcap cannot open it: " + err;
      return r;
    }
    for (uint64_t n = 1;; ++n) {
      pcap_pkthdr* hdr = nullptr;
      const u_char* data = nullptr;
      const int rc = pcap_next_ex(p.get(), &hdr, &data);
      if (rc == PCAP_ERROR_BREAK) break;  // end of file
      if (rc != 1) {
        r.problem = at(f, n) + ": libpcap: " + pcap_geterr(p.get());
        return r;
      }
      ++r.records;
      const Stamp now{hdr->ts.tv_sec, hdr->ts.tv_usec};  // nanoseconds at this precision
      if (now < last) {
        r.problem = at(f, n) + ": time stamp goes back";
        return r;
      }
      last = now;
      const std::string why =
          check(std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), hdr->caplen),
                hdr->len);
      if (!why.empty()) {
        r.problem = at(f, n) + ": " + why;
        return r;
      }
    }
  }
  return r;
}

}  // namespace rocecap::tools
