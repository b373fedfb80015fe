// verbs_conformance: checks the libibverbs behaviours rocecap relies on (shared/VERBS.md).
// Usage: verbs_conformance --dev mlx5_0 --tx-if enp1s0f1 [--dev-if enp1s0f0]
//        [--sysfs-root /sys] [--dmabuf ebadf|eopnotsupp|any] [--only NAME]
#include <cstdio>
#include <cstring>
#include <string>

#include "harness.hpp"

int main(int argc, char** argv) {
  conf::Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string(name) + "=";
      if (a.rfind(prefix, 0) == 0) return argv[i] + prefix.size();
      if (a == name && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (const char* v = value("--dev"))
      opt.dev = v;
    else if (const char* v2 = value("--tx-if"))
      opt.tx_if = v2;
    else if (const char* v3 = value("--dev-if"))
      opt.dev_if = v3;
    else if (const char* v4 = value("--sysfs-root"))
      opt.sysfs_root = v4;
    else if (const char* v5 = value("--dmabuf"))
      opt.dmabuf = v5;
    else if (const char* v6 = value("--only"))
      opt.only = v6;
    else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (opt.dev.empty() || opt.tx_if.empty()) {
    fprintf(stderr,
            "usage: %s --dev IBDEV --tx-if NETDEV [--dev-if NETDEV] [--sysfs-root DIR] "
            "[--dmabuf ebadf|eopnotsupp|any] [--only NAME]\n",
            argv[0]);
    return 2;
  }
  return conf::run_all(opt);
}
