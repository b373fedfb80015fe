// SOFTVERBS_TRAP=nft: trapping flow rules remove matching frames from the kernel stack.
//
// On mlx5 the rules of ibv_create_flow live in the "bypass" flow-steering namespace, which the
// device consults before the kernel netdev's own tables: a frame a NORMAL rule matches goes to
// the rule's QP and not to the kernel (kernel commits 4cbdd30ed5c8 "net/mlx5_core: Enable flow
// steering support for the IB driver", a3100a787941 "IB/core: Add don't trap flag to flow
// creation": a DONT_TRAP rule's QP "will receive traffic, but will not steal it"; kernel
// drivers/infiniband/hw/mlx5/fs.c get_flow_table (NORMAL rules in MLX5_FLOW_NAMESPACE_BYPASS)
// and create_dont_trap_rule (a second rule forwarding to the next priority); rdma-core
// libibverbs/man/ibv_create_flow.3). SNIFFER rules (their own namespaces) copy, never trap.
//
// softverbs reads the wire through an AF_PACKET ring, so it cannot take frames away; instead a
// drop rule is put on the netdev's netfilter ingress hook. Linux net/core/dev.c
// __netif_receive_skb_core delivers to ptype_all taps (AF_PACKET) before nf_ingress(), so the
// ring still sees the frame while IP/UDP never does. nft is run with posix_spawn (argv, no
// shell): an emulation, not a hot path (only flow create/destroy).
#include "kernel_trap.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <tuple>
#include <vector>

#include "sv.hpp"

extern char** environ;

namespace sv {
namespace {

constexpr const char* kNft = "/usr/sbin/nft";

struct NftResult {
  bool ok = false;
  std::string out;  // stdout and stderr together
};

// Runs nft with the given words; nft joins them into one command line itself.
NftResult run_nft(const std::vector<std::string>& words) {
  NftResult r;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return r;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
  std::vector<char*> argv{const_cast<char*>(kNft)};
  for (const auto& w : words)
    argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, kNft, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(p[1]);
  if (rc != 0) {
    r.out = std::string("cannot run ") + kNft + ": " + strerror(rc);
    close(p[0]);
    return r;
  }
  char buf[512];
  for (ssize_t n; (n = read(p[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.out.append(buf, static_cast<size_t>(n));
  }
  close(p[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return r;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}

std::string table_name(const Device& d) {
  return "softverbs_" + d.cfg.netdev + "_" + std::to_string(getpid());
}

std::string ip4(uint32_t net_order) {
  char b[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &net_order, b, sizeof b);
  return b;
}

std::string mac(const uint8_t* m) {
  char b[18];
  snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
  return b;
}

bool all(const uint8_t* p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != v) return false;
  return true;
}

// "field value" for a full mask, "field & mask == value" for a partial one, nothing for none.
void add_ip(std::vector<std::string>& w, const char* field, uint32_t v, uint32_t m) {
  if (m == 0) return;
  w.insert(w.end(), {"ip", field});
  if (m != 0xffffffffu) w.insert(w.end(), {"&", ip4(m), "=="});
  w.push_back(ip4(v));
}

void add_port(std::vector<std::string>& w, const char* l4, const char* field, uint16_t v,
              uint16_t m) {
  if (m == 0) return;
  w.insert(w.end(), {l4, field});
  if (m != 0xffff) w.insert(w.end(), {"&", std::to_string(ntohs(m)), "=="});
  w.push_back(std::to_string(ntohs(v)));
}

// The nft match words for a flow's specs; false for a field this model does not translate.
bool match_words(const Match& m, std::vector<std::string>& w) {
  const Key& v = m.val;
  const Key& k = m.mask;
  if (k.vlan_tag || k.tos || k.ttl || k.ip_flags) return false;
  for (auto [val, msk, name] : {std::tuple{v.dmac, k.dmac, "daddr"}, {v.smac, k.smac, "saddr"}}) {
    if (all(msk, 6, 0)) continue;
    if (!all(msk, 6, 0xff)) return false;
    w.insert(w.end(), {"ether", name, mac(val)});
  }
  if (k.ether_type && !(k.ether_type == 0xffff && v.ether_type == htons(0x0800))) return false;
  if (k.ether_type && !k.is_ipv4) w.insert(w.end(), {"ether", "type", "ip"});
  if (!k.is_ipv4) return !w.empty();
  add_ip(w, "saddr", v.src_ip, k.src_ip);
  add_ip(w, "daddr", v.dst_ip, k.dst_ip);
  const bool l4 = k.l4 != 0;
  if (k.proto && !l4) w.insert(w.end(), {"ip", "protocol", std::to_string(v.proto)});
  if (!l4) return true;
  const char* name = v.l4 == IPPROTO_UDP ? "udp" : "tcp";
  if (k.src_port == 0 && k.dst_port == 0) w.insert(w.end(), {"ip", "protocol", name});
  add_port(w, name, "sport", v.src_port, k.src_port);
  add_port(w, name, "dport", v.dst_port, k.dst_port);
  return true;
}

std::mutex table_mu;  // the device's table is made once per process

bool ensure_table(Device& d, const std::string& table) {
  std::lock_guard<std::mutex> g(table_mu);
  if (d.trap_table) return true;
  const std::string chain =
      "{ type filter hook ingress device \"" + d.cfg.netdev + "\" priority 0 ; }";
  NftResult r = run_nft({"add", "table", "netdev", table});
  if (r.ok) r = run_nft({"add", "chain", "netdev", table, "in", chain});
  if (!r.ok) {
    fprintf(stderr, "softverbs: SOFTVERBS_TRAP=nft: cannot make nft table %s on %s: %s\n",
            table.c_str(), d.cfg.netdev.c_str(), one_line(r.out).c_str());
    run_nft({"delete", "table", "netdev", table});
    return false;
  }
  d.trap_table = true;
  return true;
}

// "... # handle 7" from `nft --echo --handle add rule`.
bool parse_handle(const std::string& out, uint64_t& h) {
  const size_t at = out.rfind("# handle ");
  if (at == std::string::npos) return false;
  char* end = nullptr;
  h = strtoull(out.c_str() + at + 9, &end, 10);
  return end != out.c_str() + at + 9;
}

}  // namespace

bool kernel_trap_enabled() {
  static const bool on = [] {
    const char* e = getenv("SOFTVERBS_TRAP");
    if (!e || !*e) return false;
    if (strcmp(e, "nft") == 0) return true;
    fprintf(stderr, "softverbs: SOFTVERBS_TRAP=%s is not 'nft': flows do not trap\n", e);
    return false;
  }();
  return on;
}

std::unique_ptr<KernelTrap> KernelTrap::install(Device& d, const Match& m) {
  std::vector<std::string> words;
  if (d.cfg.wire || !match_words(m, words)) {
    fprintf(stderr,
            "softverbs: SOFTVERBS_TRAP=nft: this flow's specs are not modelled "
            "(ETH addresses, IPv4 addresses, UDP/TCP ports only)\n");
    errno = EOPNOTSUPP;
    return nullptr;
  }
  const std::string table = table_name(d);
  if (!ensure_table(d, table)) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  std::vector<std::string> cmd{"--echo", "--handle", "add", "rule", "netdev", table, "in"};
  cmd.insert(cmd.end(), words.begin(), words.end());
  cmd.push_back("drop");
  const NftResult r = run_nft(cmd);
  uint64_t handle = 0;
  if (!r.ok || !parse_handle(r.out, handle)) {
    fprintf(stderr, "softverbs: SOFTVERBS_TRAP=nft: nft add rule failed: %s\n",
            one_line(r.out).c_str());
    errno = EOPNOTSUPP;
    return nullptr;
  }
  return std::unique_ptr<KernelTrap>(new KernelTrap(table, handle));
}

KernelTrap::~KernelTrap() {
  const NftResult r =
      run_nft({"delete", "rule", "netdev", table_, "in", "handle", std::to_string(handle_)});
  if (!r.ok)
    fprintf(stderr, "softverbs: SOFTVERBS_TRAP=nft: nft delete rule %llu in %s failed: %s\n",
            static_cast<unsigned long long>(handle_), table_.c_str(), one_line(r.out).c_str());
}

void kernel_trap_close(Device& d) {
  std::lock_guard<std::mutex> g(table_mu);
  if (!d.trap_table) return;
  const std::string table = table_name(d);
  const NftResult r = run_nft({"delete", "table", "netdev", table});
  if (!r.ok)
    fprintf(stderr, "softverbs: SOFTVERBS_TRAP=nft: nft delete table %s failed: %s\n",
            table.c_str(), one_line(r.out).c_str());
  d.trap_table = false;
}

}  // namespace sv
