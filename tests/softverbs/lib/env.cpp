// Configuration from the environment: which fake devices exist and how they behave.
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "sv.hpp"

namespace sv {
namespace {

std::vector<DeviceConfig> parse_devices(const char* spec) {
  // SOFTVERBS_DEVICES="sv0=veth0,sv1=veth1,svw=wire"
  std::vector<DeviceConfig> out;
  std::string s = spec ? spec : "";
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    size_t eq = item.find('=');
    if (eq != std::string::npos && eq > 0 && eq + 1 < item.size()) {
      DeviceConfig c;
      c.name = item.substr(0, eq);
      c.netdev = item.substr(eq + 1);
      c.wire = c.netdev == "wire";
      if (c.wire) c.netdev.clear();
      out.push_back(c);
    }
    pos = end + 1;
  }
  return out;
}

}  // namespace

const std::vector<DeviceConfig>& configured_devices() {
  static const std::vector<DeviceConfig> devs = parse_devices(getenv("SOFTVERBS_DEVICES"));
  return devs;
}

std::string sysfs_root() {
  const char* r = getenv("SOFTVERBS_SYSFS_ROOT");
  return r && *r ? r : "";
}

bool dmabuf_supported() {
  const char* m = getenv("SOFTVERBS_DMABUF");
  return m && std::string(m) == "ebadf";
}

ClockMode clock_mode() {
  const char* m = getenv("SOFTVERBS_CLOCK");
  const std::string v = m ? m : "";
  if (v == "raw") return ClockMode::raw;
  if (v == "none") return ClockMode::none;
  return ClockMode::wallclock;
}

unsigned modify_qp_delay_us() {
  static const unsigned us = [] {
    const char* v = getenv("SOFTVERBS_MODIFY_QP_US");
    return v ? static_cast<unsigned>(strtoul(v, nullptr, 10)) : 0u;
  }();
  return us;
}

namespace {

// "loc_qp_op" -> IBV_WC_LOC_QP_OP_ERR and the vendor syndrome softverbs reports with it.
bool wc_status_named(const std::string& name, WcErrorInjection& out) {
  struct Named {
    const char* name;
    ibv_wc_status status;
    uint32_t vendor_err;
  };
  static const Named table[] = {{"loc_qp_op", IBV_WC_LOC_QP_OP_ERR, 0x53},
                                {"loc_prot", IBV_WC_LOC_PROT_ERR, 0x52},
                                {"general", IBV_WC_GENERAL_ERR, 0x54},
                                {"loc_len", IBV_WC_LOC_LEN_ERR, 0x51}};
  for (const Named& n : table) {
    if (name == n.name) {
      out.status = static_cast<uint16_t>(n.status);
      out.vendor_err = n.vendor_err;
      return true;
    }
  }
  return false;
}

// SOFTVERBS_INJECT_WC_ERROR="after=N[,every=M][,status=loc_qp_op|loc_prot|general|loc_len]
// [,dev=NAME]".
// Anything malformed disables injection and says so once on stderr: a test that asked for
// errors must not silently run without them.
WcErrorInjection parse_injection(const char* spec) {
  WcErrorInjection w;
  if (!spec || !*spec) return w;
  wc_status_named("loc_qp_op", w);
  const std::string s = spec;
  bool ok = true;
  for (size_t pos = 0; pos < s.size() && ok;) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* rest = nullptr;
    if (key == "after" || key == "every") {
      const unsigned long long n = strtoull(val.c_str(), &rest, 10);
      ok = !val.empty() && *rest == 0;
      (key == "after" ? w.after : w.every) = n;
    } else if (key == "status") {
      ok = wc_status_named(val, w);
    } else if (key == "dev") {
      w.device = val;
    } else {
      ok = false;
    }
    pos = end + 1;
  }
  w.enabled = ok && w.after > 0;
  if (!w.enabled) fprintf(stderr, "softverbs: SOFTVERBS_INJECT_WC_ERROR=%s not understood\n", spec);
  return w;
}

}  // namespace

const WcErrorInjection& wc_error_injection() {
  static const WcErrorInjection w = parse_injection(getenv("SOFTVERBS_INJECT_WC_ERROR"));
  return w;
}

LocLenMode loc_len_mode() {
  static const LocLenMode mode = [] {
    const char* v = getenv("SOFTVERBS_LOC_LEN");
    const std::string s = v ? v : "";
    if (s.empty() || s == "error") return LocLenMode::error;
    if (s == "continue") return LocLenMode::proceed;
    fprintf(stderr, "softverbs: SOFTVERBS_LOC_LEN=%s not understood (error|continue): error\n", v);
    return LocLenMode::error;
  }();
  return mode;
}

bool has_cap_net_raw() {
  __user_cap_header_struct hdr{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capget, &hdr, data) != 0) return false;
  return (data[CAP_NET_RAW / 32].effective & (1u << (CAP_NET_RAW % 32))) != 0;
}

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// The raw HCA clock runs at kHcaClockKhz from an arbitrary origin, like a NIC's free-running
// counter; applications must fit it against the host clock (query_rt_values), never assume ns.
uint64_t ns_to_ticks(uint64_t ns) {
  constexpr uint64_t kOrigin = 1000000000ULL * 1600000000ULL;  // 2020-09-13, keeps ticks small
  const uint64_t rel = ns > kOrigin ? ns - kOrigin : 0;
  static_assert(kHcaClockKhz == 156250, "ticks per ns is 5/32 below");
  return ((rel / 32) * 5 + (rel % 32) * 5 / 32) & kTimestampMask;
}

uint32_t allocate_qpn() {
  static std::atomic<uint32_t> next{0x100};
  return next.fetch_add(1) & 0xffffff;
}

uint32_t allocate_key() {
  static std::atomic<uint32_t> next{0x1000};
  return next.fetch_add(0x100) | 0x5a;
}

}  // namespace sv
