// check_capture: compares a pcap written by a real capture client (tcpdump) with the JSON
// summary `rocecap gen` printed for the traffic it sent (see capture_check.hpp).
//
//   check_capture --pcap FILE --summary FILE
//
// Exit status: 0 the capture matches, 1 it does not (every mismatch is printed), 2 the inputs
// cannot be read.
#include <pcap/pcap.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tests/integration/capture_check.hpp"

namespace {

struct PcapCloser {
  void operator()(pcap_t* p) const noexcept { pcap_close(p); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;

int usage() {
  std::cerr << "usage: check_capture --pcap FILE --summary FILE\n";
  return 2;
}

rocecap::tools::GenSummary read_summary(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  try {
    return nlohmann::json::parse(in).get<rocecap::tools::GenSummary>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a rocecap gen summary: " + e.what());
  }
}

// Feeds every record to the checker; returns false (with a message) when the file is unusable.
bool feed_pcap(const std::string& path, rocecap::itest::CaptureChecker& checker) {
  char err[PCAP_ERRBUF_SIZE] = {};
  PcapHandle p(pcap_open_offline(path.c_str(), err));
  if (!p) {
    std::cerr << "check_capture: " << path << ": " << err << "\n";
    return false;
  }
  if (pcap_datalink(p.get()) != DLT_EN10MB) {
    std::cerr << "check_capture: " << path << ": link type " << pcap_datalink(p.get())
              << " is not Ethernet\n";
    return false;
  }
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  uint64_t record = 0;
  int rc = 0;
  while ((rc = pcap_next_ex(p.get(), &hdr, &data)) == 1) {
    ++record;
    if (hdr->caplen != hdr->len) {
      std::cerr << "check_capture: " << path << ": record " << record << " cut at " << hdr->caplen
                << " of " << hdr->len << " bytes (snaplen too small)\n";
      return false;
    }
    checker.add_frame(std::as_bytes(std::span(data, hdr->caplen)));
  }
  if (rc != PCAP_ERROR_BREAK) {
    std::cerr << "check_capture: " << path << ": after record " << record << ": "
              << pcap_geterr(p.get()) << "\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string pcap_path, summary_path;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (i + 1 >= argc) return usage();
    if (a == "--pcap") {
      pcap_path = argv[++i];
    } else if (a == "--summary") {
      summary_path = argv[++i];
    } else {
      return usage();
    }
  }
  if (pcap_path.empty() || summary_path.empty()) return usage();
  try {
    rocecap::itest::CaptureChecker checker(read_summary(summary_path));
    if (!feed_pcap(pcap_path, checker)) return 2;
    const auto result = checker.finish();
    std::cout << "check_capture: " << pcap_path << " against " << summary_path << "\n"
              << result.report();
    return result.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "check_capture: " << e.what() << "\n";
    return 2;
  }
}
