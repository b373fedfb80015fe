// rocecap_power_stage: an example pipeline stage on rocecapd's consumer interface
// (rocecap_consumer.hpp). It reads the streams it is given and sums, per antenna (stream) and
// channel, the power |x|^2 of every sample of every non-fill frame, then prints one table per
// stream.
//
//   rocecap_power_stage --socket PATH [--stream NAME]... [--seconds S] [--hold] [--name WORD]
//                       [--nchan N --nbits 4|8|16 [--complex]]
//
// Sample layout assumed (CODIF as DiFX and the ATCA/ASKAP beamformers write it): the frame's
// data array is time-major, channel-minor: for each time sample, for each channel, one value
// (real data) or the real then the imaginary part (complex data). Values are two's complement
// integers: 16-bit little-endian, 8-bit bytes, or 4-bit nibbles, the low nibble first. Without
// --nchan/--nbits/--complex they are taken from each stream's first CODIF header (current
// layout, sync 0xFEEDCAFE: bits per sample in word 1 bits 8-15, complex bit 18, channels in
// word 3 bits 0-15). GPU payloads (no host copy) are counted but not summed.
//
// It stops after --seconds, on SIGINT/SIGTERM, or once rocecapd ended every stream, and exits 0.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <rocecap_consumer.hpp>
#include <string>
#include <thread>
#include <vector>

namespace rc = rocecap::consumer;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}

struct Layout {
  unsigned nchan = 0, nbits = 0;
  bool complex = false;
  bool known() const { return nchan > 0 && (nbits == 4 || nbits == 8 || nbits == 16); }
};

struct Totals {
  Layout layout;
  bool layout_fixed = false;  // from the command line
  uint64_t frames = 0, fill = 0, gpu = 0, unsummed = 0, torn = 0;
  uint64_t samples = 0;  // time samples summed per channel
  std::vector<double> power;
};

uint64_t word(const rc::Frame& f, int i) {
  uint64_t w = 0;
  std::memcpy(&w, f.header.data() + 8 * i, 8);
  return w;  // little-endian host (x86-64, aarch64)
}

// The layout from a CODIF header of the current layout; unknown (zeros) otherwise.
Layout codif_layout(const rc::Frame& f) {
  Layout l;
  if (f.header.size() < 64 || (word(f, 5) & 0xffffffffu) != 0xFEEDCAFEu) return l;
  l.nbits = static_cast<unsigned>((word(f, 1) >> 8) & 0xff);
  l.complex = ((word(f, 1) >> 18) & 1) != 0;
  l.nchan = static_cast<unsigned>(word(f, 3) & 0xffff);
  return l;
}

int value_at(const std::byte* data, uint64_t k, unsigned nbits) {
  switch (nbits) {
    case 16: {
      const auto lo = static_cast<unsigned>(data[2 * k]);
      const auto hi = static_cast<unsigned>(data[2 * k + 1]);
      return static_cast<int16_t>(static_cast<uint16_t>(lo | (hi << 8)));
    }
    case 8:
      return static_cast<int8_t>(data[k]);
    default: {  // 4: low nibble first, sign-extended
      const auto b = static_cast<unsigned>(data[k / 2]);
      const unsigned nibble = (k % 2 == 0) ? (b & 0xf) : (b >> 4);
      return static_cast<int>(nibble ^ 8u) - 8;
    }
  }
}

void accumulate(Totals& t, const std::byte* data, std::size_t bytes) {
  const Layout& l = t.layout;
  const unsigned parts = l.complex ? 2 : 1;
  const uint64_t values = bytes * 8 / l.nbits;
  const uint64_t per_sample = uint64_t{l.nchan} * parts;
  const uint64_t samples = values / per_sample;
  if (t.power.size() != l.nchan) t.power.assign(l.nchan, 0.0);
  uint64_t k = 0;
  for (uint64_t s = 0; s < samples; ++s) {
    for (unsigned c = 0; c < l.nchan; ++c) {
      double p = 0;
      for (unsigned part = 0; part < parts; ++part, ++k) {
        const double v = value_at(data, k, l.nbits);
        p += v * v;
      }
      t.power[c] += p;
    }
  }
  t.samples += samples;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "rocecap_power_stage: %s\n"
               "usage: rocecap_power_stage --socket PATH [--stream NAME]... [--seconds S] "
               "[--hold] [--name WORD] [--nchan N --nbits 4|8|16 [--complex]]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  rc::ConnectOptions options;
  options.name = "power_stage";
  double seconds = 0;
  Layout given;
  bool complex_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto arg = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--socket") {
      options.socket = arg();
    } else if (a == "--stream") {
      options.streams.push_back(arg());
    } else if (a == "--seconds") {
      seconds = std::atof(arg().c_str());
    } else if (a == "--name") {
      options.name = arg();
    } else if (a == "--hold") {
      options.mode = rc::Mode::hold;
    } else if (a == "--nchan") {
      given.nchan = static_cast<unsigned>(std::atoi(arg().c_str()));
    } else if (a == "--nbits") {
      given.nbits = static_cast<unsigned>(std::atoi(arg().c_str()));
    } else if (a == "--complex") {
      given.complex = complex_given = true;
    } else if (a == "--help" || a == "-h") {
      usage("reads rocecapd's streams and sums the power per channel");
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  if (options.socket.empty()) usage("--socket is required");
  const bool layout_given = given.nchan > 0 || given.nbits > 0 || complex_given;
  if (layout_given && !given.known()) usage("--nchan N and --nbits 4, 8 or 16 go together");

  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  try {
    rc::Client client(options);
    std::vector<rc::Stream>& streams = client.streams();
    std::vector<Totals> totals(streams.size());
    std::vector<bool> ended(streams.size(), false);
    for (Totals& t : totals) {
      t.layout = given;
      t.layout_fixed = layout_given;
    }
    std::vector<std::byte> buf;
    const auto start = std::chrono::steady_clock::now();
    auto last_report = start;
    rc::Frame f;
    for (;;) {
      bool busy = false;
      std::size_t done = 0;
      for (std::size_t i = 0; i < streams.size(); ++i) {
        rc::Stream& st = streams[i];
        Totals& t = totals[i];
        // A bounded batch per stream, so that no stream starves the others.
        for (int batch = 0; batch < 256 && !ended[i]; ++batch) {
          const rc::Event e = st.next(f);
          if (e == rc::Event::none) break;
          busy = true;
          if (e == rc::Event::ended) {
            ended[i] = true;
            break;
          }
          if (e != rc::Event::frame) continue;  // missed: counted by the stream
          ++t.frames;
          if (f.fill()) {
            ++t.fill;
            st.done_with(f);
            continue;
          }
          if (!t.layout_fixed && !t.layout.known()) t.layout = codif_layout(f);
          if (f.data1.empty() && f.data1_len > 0) {
            ++t.gpu;  // payload in GPU memory: a CUDA stage would read it there
            st.done_with(f);
            continue;
          }
          buf.resize(f.size());
          if (!st.copy(f, buf)) {
            ++t.torn;  // overwritten while copied: counted missed by the stream
            continue;
          }
          st.done_with(f);
          if (!t.layout.known()) {
            ++t.unsummed;
            continue;
          }
          const std::size_t h = f.header.size();
          accumulate(t, buf.data() + h, buf.size() - h);
        }
        done += ended[i] ? 1 : 0;
      }
      const auto now = std::chrono::steady_clock::now();
      if (now - last_report > std::chrono::milliseconds(100)) {
        client.report();
        last_report = now;
      }
      if (done == streams.size() || g_stop) break;
      if (seconds > 0 && now - start > std::chrono::duration<double>(seconds)) break;
      if (!busy) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    client.report();
    if (!client.connected() && !client.detach_reason().empty()) {
      std::printf("rocecapd closed the connection: %s\n", client.detach_reason().c_str());
    }

    for (std::size_t i = 0; i < streams.size(); ++i) {
      const rc::Stream& st = streams[i];
      const Totals& t = totals[i];
      std::printf("stream %s (%s, %s memory)\n", st.info().name.c_str(), st.info().format.c_str(),
                  st.info().payload_memory.c_str());
      std::printf("  frames read %llu  missed %llu  fill %llu",
                  (unsigned long long)st.frames_read(), (unsigned long long)st.frames_missed(),
                  (unsigned long long)t.fill);
      if (t.gpu) std::printf("  gpu (not summed) %llu", (unsigned long long)t.gpu);
      if (t.unsummed)
        std::printf("  unknown layout (not summed) %llu", (unsigned long long)t.unsummed);
      std::printf("\n");
      if (t.power.empty()) {
        std::printf("  no power summed\n");
        continue;
      }
      std::printf("  %u channels, %u-bit %s, %llu time samples\n", t.layout.nchan, t.layout.nbits,
                  t.layout.complex ? "complex" : "real", (unsigned long long)t.samples);
      std::printf("  %7s  %18s  %14s\n", "channel", "power sum |x|^2", "mean/sample");
      for (std::size_t c = 0; c < t.power.size(); ++c) {
        std::printf("  %7zu  %18.6g  %14.6g\n", c, t.power[c],
                    t.samples ? t.power[c] / static_cast<double>(t.samples) : 0.0);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rocecap_power_stage: %s\n", e.what());
    return 1;
  }
  return 0;
}
