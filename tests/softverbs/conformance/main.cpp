// verbs_conformance: checks the libibverbs behaviours rocecap relies on (doc/verbs.md).
// Usage: verbs_conformance --dev mlx5_0 --tx-if enp1s0f1 [--dev-if enp1s0f0]
//        [--sysfs-root /sys] [--dmabuf ebadf|eopnotsupp|any] [--only NAME]
//        [--dev2 mlx5_1 --tx-if2 enp1s0f0]
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include "harness.hpp"

int main(int argc, char** argv) {
  conf::Options opt;
  const std::pair<const char*, std::string*> flags[] = {
      {"--dev", &opt.dev},       {"--tx-if", &opt.tx_if},
      {"--dev-if", &opt.dev_if}, {"--sysfs-root", &opt.sysfs_root},
      {"--dmabuf", &opt.dmabuf}, {"--only", &opt.only},
      {"--dev2", &opt.dev2},     {"--tx-if2", &opt.tx_if2}};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    bool known = false;
    for (const auto& [name, field] : flags) {
      const std::string prefix = std::string(name) + "=";
      if (a.rfind(prefix, 0) == 0) {
        *field = a.substr(prefix.size());
      } else if (a == name && i + 1 < argc) {
        *field = argv[++i];
      } else {
        continue;
      }
      known = true;
      break;
    }
    if (!known) {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (opt.dev.empty() || opt.tx_if.empty()) {
    fprintf(stderr,
            "usage: %s --dev IBDEV --tx-if NETDEV [--dev-if NETDEV] [--sysfs-root DIR] "
            "[--dmabuf ebadf|eopnotsupp|any] [--only NAME] [--dev2 IBDEV --tx-if2 NETDEV]\n",
            argv[0]);
    return 2;
  }
  return conf::run_all(opt);
}
