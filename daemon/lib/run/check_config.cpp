#include "daemon/lib/run/check_config.hpp"

#include "config/summary.hpp"

namespace rocecap::daemon {

int run_check_config(const std::string& path, std::ostream& out, std::ostream& err,
                     const config::HostChecks& host) {
  const config::LoadResult result = config::load_file(path, host);
  if (!result.ok()) {
    for (const config::Problem& p : result.problems)
      err << config::format_problem(p) << '\n';
    const std::size_t n = result.problems.size();
    err << path << ": " << n << (n == 1 ? " problem" : " problems") << ", nothing started\n";
    return kCheckConfigInvalid;
  }
  out << config::render_summary(*result.config);
  out << path << ": OK\n";
  return kCheckConfigOk;
}

}  // namespace rocecap::daemon
