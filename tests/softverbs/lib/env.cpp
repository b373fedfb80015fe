// Configuration from the environment: which fake devices exist and how they behave.
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <utility>

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

namespace {

bool clock_kind(const std::string& k, ClockMode& out) {
  if (k == "wallclock")
    out = ClockMode::wallclock;
  else if (k == "realtime")
    out = ClockMode::realtime;
  else if (k == "rtonly")
    out = ClockMode::rtonly;
  else if (k == "raw")
    out = ClockMode::raw;
  else if (k == "none")
    out = ClockMode::none;
  else
    return false;
  return true;
}

// "KIND[,tai][,offset=S][,ppm=P]". Anything malformed leaves the default (wallclock, PHC =
// CLOCK_REALTIME) and says so once on stderr.
ClockConfig parse_clock(const char* spec) {
  ClockConfig c;
  if (!spec || !*spec) return c;
  const std::string s = spec;
  bool ok = true;
  size_t pos = 0;
  for (bool first = true; pos <= s.size() && ok; first = false) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq),
                      val = eq == std::string::npos ? "" : item.substr(eq + 1);
    char* rest = nullptr;
    if (first) {
      ok = clock_kind(item, c.mode);
    } else if (item == "tai") {
      c.offset_ns = 37'000'000'000;  // TAI - UTC since 2017-01-01
    } else if (key == "offset" || key == "ppm") {
      const double v = strtod(val.c_str(), &rest);
      ok = !val.empty() && *rest == 0;
      if (key == "offset")
        c.offset_ns = static_cast<int64_t>(v * 1e9);
      else
        c.ppm = v;
    } else {
      ok = false;
    }
    pos = end + 1;
  }
  if (!ok) {
    fprintf(stderr, "softverbs: SOFTVERBS_CLOCK=%s not understood\n", spec);
    return ClockConfig{};
  }
  return c;
}

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = getenv(name);
  char* rest = nullptr;
  const unsigned long long n = v && *v ? strtoull(v, &rest, 10) : 0;
  if (!v || !*v) return fallback;
  if (*rest != 0) {
    fprintf(stderr, "softverbs: %s=%s not understood\n", name, v);
    return fallback;
  }
  return n;
}

}  // namespace

const ClockConfig& clock_config() {
  static const ClockConfig c = parse_clock(getenv("SOFTVERBS_CLOCK"));
  return c;
}

// The PHC: CLOCK_REALTIME plus the configured offset, running `ppm` fast from the process's
// first clock read (a free-running oscillator; the kernel's mlx5 clock starts from
// ktime_get_real at driver load, ptp4l then steps it to TAI and disciplines it).
uint64_t phc_ns(uint64_t host_ns) {
  static const uint64_t origin = realtime_ns();
  const ClockConfig& c = clock_config();
  const double drift = (static_cast<double>(host_ns) - static_cast<double>(origin)) * c.ppm * 1e-6;
  return static_cast<uint64_t>(static_cast<int64_t>(host_ns) + c.offset_ns +
                               static_cast<int64_t>(drift));
}

int max_cqe() {
  static const int n = static_cast<int>(env_u64("SOFTVERBS_MAX_CQE", kMaxCqe));
  return n;
}

// SOFTVERBS_INJECT_CQ_OVERRUN=after=N.
uint64_t cq_overrun_after() {
  static const uint64_t n = [] {
    const char* v = getenv("SOFTVERBS_INJECT_CQ_OVERRUN");
    if (!v || !*v) return uint64_t{0};
    char* rest = nullptr;
    const std::string s = v;
    const unsigned long long after = s.rfind("after=", 0) == 0 ? strtoull(v + 6, &rest, 10) : 0;
    if (after == 0 || *rest != 0) {
      fprintf(stderr, "softverbs: SOFTVERBS_INJECT_CQ_OVERRUN=%s not understood\n", v);
      return uint64_t{0};
    }
    return static_cast<uint64_t>(after);
  }();
  return n;
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

namespace {

// "key=value[,key=value...]" into pairs; false when an item has no '=' or an empty value.
bool split_items(const std::string& s, std::vector<std::pair<std::string, std::string>>& out) {
  for (size_t pos = 0; pos < s.size();) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    const std::string item = s.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq + 1 == item.size()) return false;
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
    pos = end + 1;
  }
  return true;
}

bool whole_number(const std::string& v, uint64_t& out) {
  char* rest = nullptr;
  out = strtoull(v.c_str(), &rest, 10);
  return !v.empty() && *rest == 0;
}

// SOFTVERBS_INJECT_QP_FATAL="after=N[,dev=NAME]"; malformed: off, said on stderr.
QpFatalInjection parse_qp_fatal(const char* spec) {
  QpFatalInjection q;
  if (!spec || !*spec) return q;
  std::vector<std::pair<std::string, std::string>> items;
  bool ok = split_items(spec, items);
  for (const auto& [key, val] : items) {
    if (key == "after")
      ok = ok && whole_number(val, q.after);
    else if (key == "dev")
      q.device = val;
    else
      ok = false;
  }
  q.enabled = ok && q.after > 0;
  if (!q.enabled) fprintf(stderr, "softverbs: SOFTVERBS_INJECT_QP_FATAL=%s not understood\n", spec);
  return q;
}

// SOFTVERBS_INJECT_CLOCK_EBUSY="every=N[,rdma_core=44|53|fixed]"; malformed: off, on stderr.
ClockEbusyInjection parse_clock_ebusy(const char* spec) {
  ClockEbusyInjection c;
  if (!spec || !*spec) return c;
  std::vector<std::pair<std::string, std::string>> items;
  bool ok = split_items(spec, items);
  for (const auto& [key, val] : items) {
    if (key == "every") {
      ok = ok && whole_number(val, c.every);
    } else if (key == "rdma_core" && (val == "44" || val == "53" || val == "fixed")) {
      c.flow = val == "44" ? EbusyFlow::v44 : val == "53" ? EbusyFlow::v53 : EbusyFlow::fixed;
    } else {
      ok = false;
    }
  }
  if (!ok || c.every == 0) {
    fprintf(stderr, "softverbs: SOFTVERBS_INJECT_CLOCK_EBUSY=%s not understood\n", spec);
    return ClockEbusyInjection{};
  }
  return c;
}

}  // namespace

const QpFatalInjection& qp_fatal_injection() {
  static const QpFatalInjection q = parse_qp_fatal(getenv("SOFTVERBS_INJECT_QP_FATAL"));
  return q;
}

const ClockEbusyInjection& clock_ebusy_injection() {
  static const ClockEbusyInjection c = parse_clock_ebusy(getenv("SOFTVERBS_INJECT_CLOCK_EBUSY"));
  return c;
}

bool trace_enabled() {
  static const bool on = [] {
    const char* v = getenv("SOFTVERBS_TRACE");
    return v && std::string(v) == "1";
  }();
  return on;
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
