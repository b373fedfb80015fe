// `rocecap quicklook RUN_DIR`: PNG pictures of a run (bandpass, power against time, loss
// timeline per antenna; a summary page), drawn by tools/quicklook/rocecap_quicklook.py with the
// numpy and matplotlib astronomers already have (Debian's python3-numpy, python3-matplotlib).
// The options are parsed here, so `rocecap quicklook --help` reads like the other subcommands,
// and handed to the script, which this process becomes (execv): its exit status is ours.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/command.hpp"

namespace rocecap::tools {
namespace {

namespace fs = std::filesystem;

struct QuicklookArgs {
  std::string run_dir, out;
  unsigned fft = 256, max_frames = 512;
  double start = 0, span = 0;
};

// The installed script (<prefix>/share/rocecap/quicklook/, found from this executable's own
// path, so a package installed under /usr finds its own copy), else the source tree's: a
// binary run from its build tree never picks up an installed script of another version.
std::string script_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / ROCECAP_QUICKLOOK_INSTALLED;
    if (fs::is_regular_file(installed, ec)) return installed.string();
  }
  return ROCECAP_QUICKLOOK_SOURCE;
}

int run_quicklook(const QuicklookArgs& a) {
  const std::string script = script_path();
  if (access(script.c_str(), R_OK) != 0) {
    std::cerr << "rocecap quicklook: cannot read its script " << script << ": "
              << std::strerror(errno) << "\n";
    return 3;
  }
  std::vector<std::string> args{ROCECAP_PYTHON,
                                script,
                                a.run_dir,
                                "--fft",
                                std::to_string(a.fft),
                                "--max-frames",
                                std::to_string(a.max_frames),
                                "--start",
                                std::to_string(a.start),
                                "--span",
                                std::to_string(a.span)};
  if (!a.out.empty()) args.insert(args.end(), {"--out", a.out});
  std::vector<char*> argv;
  for (std::string& s : args)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execv(ROCECAP_PYTHON, argv.data());
  std::cerr << "rocecap quicklook: cannot run " << ROCECAP_PYTHON << ": " << std::strerror(errno)
            << " (apt-get install python3 python3-numpy python3-matplotlib)\n";
  return 3;
}

}  // namespace

void add_quicklook_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<QuicklookArgs>();
  QuicklookArgs& a = *args;
  CLI::App* ql = app.add_subcommand(
      "quicklook",
      "PNG pictures of a run: per antenna the bandpass (FFT of the voltages), power against "
      "time and the loss timeline; a one-page summary. Needs python3-numpy and "
      "python3-matplotlib");
  ql->add_option("RUN_DIR", a.run_dir, "The run directory (or its manifest.json)")->required();
  ql->add_option("--out", a.out,
                 "Directory for the PNGs and quicklook.json (default: "
                 "./quicklook-<run>)");
  ql->add_option("--fft", a.fft, "FFT channels per coarse channel of the bandpass")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  ql->add_option("--start", a.start, "Bandpass span start: seconds after the stream's first frame")
      ->check(CLI::NonNegativeNumber);
  ql->add_option("--span", a.span, "Bandpass span in seconds (default 0: the whole run)")
      ->check(CLI::NonNegativeNumber);
  ql->add_option("--max-frames", a.max_frames, "Frames read per stream, evenly spread over the run")
      ->check(CLI::Range(1u, 1u << 24))
      ->capture_default_str();
  ql->footer(
      "Exit codes: 0 pictures written; 1 the run, or a file it lists, cannot be read (the "
      "others are still drawn); 3 python3, numpy or matplotlib missing; a bad option is "
      "refused before anything is read (CLI11's code, e.g. 105 for a value out of range)");
  ql->callback([args, &action] { action = [args] { return run_quicklook(*args); }; });
}

}  // namespace rocecap::tools
