// rocecap_gpu_power: the GPU version of rocecap_power_stage (power_stage.cpp). It reads the
// streams of a rocecapd whose payload slabs are in GPU memory (capture.payload_memory: gpu)
// where they lie: the slab is mapped into this process with the CUDA IPC handle rocecapd sends
// (cudaIpcOpenMemHandle), and a kernel sums |x|^2 per channel over each batch of frames
// straight from the slab, without a copy to the host. Only the descriptors are read on the CPU.
//
//   rocecap_gpu_power --socket PATH [--stream NAME]... [--seconds S] [--device N]
//                     --nchan N --nbits 4|8|16 [--complex]
//
// The frame data must start in the payload slot (capture.header_split = the UDP payload offset
// + 64: 106 untagged), so that all of it is in GPU memory. A kernel reads slots that rocecapd
// may reuse meanwhile; each frame's sums are kept apart and added only when the slot's
// generation is unchanged after the kernel (Stream::still_valid), as doc/consumers.md says.
// Output: the table rocecap_power_stage prints. Exit 0; 1 on errors (CUDA, socket); 2 usage.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <rocecap_consumer.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace rc = rocecap::consumer;

namespace {

constexpr int kBatch = 256;  // frames per kernel launch

struct Layout {
  unsigned nchan = 0, nbits = 0;
  bool complex = false;
};

void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorString(e));
}

__device__ int value_at(const unsigned char* d, uint64_t k, unsigned nbits) {
  if (nbits == 16) return static_cast<int16_t>(static_cast<uint16_t>(d[2 * k] | (d[2 * k + 1] << 8)));
  if (nbits == 8) return static_cast<int8_t>(d[k]);
  const unsigned b = d[k / 2];
  const unsigned nibble = (k % 2 == 0) ? (b & 0xfu) : (b >> 4);
  return static_cast<int>(nibble ^ 8u) - 8;
}

// Block f sums frame f: thread t takes channels t, t + blockDim, ... over every time sample,
// so each partial sum has one writer and needs no atomics.
__global__ void power_kernel(const unsigned char* slab, const uint64_t* offsets, uint32_t bytes,
                             Layout l, double* out) {
  const unsigned char* data = slab + offsets[blockIdx.x];
  const unsigned parts = l.complex ? 2 : 1;
  const uint64_t per_sample = uint64_t{l.nchan} * parts;
  const uint64_t samples = uint64_t{bytes} * 8 / l.nbits / per_sample;
  for (unsigned c = threadIdx.x; c < l.nchan; c += blockDim.x) {
    double p = 0;
    for (uint64_t s = 0; s < samples; ++s) {
      for (unsigned part = 0; part < parts; ++part) {
        const double v = value_at(data, s * per_sample + uint64_t{c} * parts + part, l.nbits);
        p += v * v;
      }
    }
    out[uint64_t{blockIdx.x} * l.nchan + c] = p;
  }
}

uint8_t hex_nibble(char c) {
  if (c >= '0' && c <= '9') return static_cast<uint8_t>(c - '0');
  if (c >= 'a' && c <= 'f') return static_cast<uint8_t>(c - 'a' + 10);
  throw std::runtime_error("bad hex in cuda_ipc");
}

// The slab of one stream, mapped from rocecapd's handle; unmapped by the destructor.
struct MappedSlab {
  void* mapped = nullptr;         // the allocation
  unsigned char* base = nullptr;  // the slab: mapped + cuda_offset
  explicit MappedSlab(const rc::StreamInfo& info) {
    cudaIpcMemHandle_t h;
    if (info.cuda_ipc_handle.size() != 2 * sizeof h.reserved)
      throw std::runtime_error("stream " + info.name + ": no CUDA IPC handle (payload_memory " +
                               info.payload_memory + ")");
    for (std::size_t i = 0; i < sizeof h.reserved; ++i)
      h.reserved[i] = static_cast<char>(hex_nibble(info.cuda_ipc_handle[2 * i]) << 4 |
                                        hex_nibble(info.cuda_ipc_handle[2 * i + 1]));
    check(cudaIpcOpenMemHandle(&mapped, h, cudaIpcMemLazyEnablePeerAccess),
          "cudaIpcOpenMemHandle");
    base = static_cast<unsigned char*>(mapped) + info.cuda_offset;
  }
  ~MappedSlab() {
    if (mapped != nullptr) cudaIpcCloseMemHandle(mapped);
  }
  MappedSlab(const MappedSlab&) = delete;
  MappedSlab& operator=(const MappedSlab&) = delete;
};

struct Totals {
  uint64_t frames = 0, fill = 0, samples = 0, torn = 0;
  std::vector<double> power;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "rocecap_gpu_power: %s\nusage: rocecap_gpu_power --socket PATH [--stream NAME]... "
               "[--seconds S] [--device N] --nchan N --nbits 4|8|16 [--complex]\n",
               why);
  std::exit(2);
}

// One batch of frames of one stream through the kernel; sums of frames still valid after it.
void run_batch(rc::Stream& st, std::vector<rc::Frame>& frames, unsigned char* slab,
               const Layout& l, Totals& t, uint64_t* d_offsets, double* d_out) {
  if (frames.empty()) return;
  const uint32_t bytes = frames.front().data1_len;
  std::vector<uint64_t> offsets;
  for (const rc::Frame& f : frames)
    offsets.push_back(f.data1_offset);
  check(cudaMemcpy(d_offsets, offsets.data(), offsets.size() * 8, cudaMemcpyHostToDevice),
        "cudaMemcpy");
  power_kernel<<<static_cast<unsigned>(frames.size()), 128>>>(slab, d_offsets, bytes, l, d_out);
  check(cudaGetLastError(), "power_kernel");
  std::vector<double> out(frames.size() * l.nchan);
  check(cudaMemcpy(out.data(), d_out, out.size() * 8, cudaMemcpyDeviceToHost), "cudaMemcpy");
  const uint64_t samples = uint64_t{bytes} * 8 / l.nbits / (l.nchan * (l.complex ? 2u : 1u));
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (!st.still_valid(frames[i])) {  // the slot was reused during the kernel
      st.count_torn(frames[i]);
      ++t.torn;
      continue;
    }
    for (unsigned c = 0; c < l.nchan; ++c)
      t.power[c] += out[i * l.nchan + c];
    t.samples += samples;
    st.done_with(frames[i]);
  }
  frames.clear();
}

}  // namespace

int main(int argc, char** argv) {
  rc::ConnectOptions options;
  options.name = "gpu_power";
  double seconds = 0;
  int device = 0;
  Layout l;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto arg = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--socket") options.socket = arg();
    else if (a == "--stream") options.streams.push_back(arg());
    else if (a == "--seconds") seconds = std::atof(arg().c_str());
    else if (a == "--device") device = std::atoi(arg().c_str());
    else if (a == "--nchan") l.nchan = static_cast<unsigned>(std::atoi(arg().c_str()));
    else if (a == "--nbits") l.nbits = static_cast<unsigned>(std::atoi(arg().c_str()));
    else if (a == "--complex") l.complex = true;
    else usage(("unknown argument " + a).c_str());
  }
  if (options.socket.empty()) usage("--socket is required");
  if (l.nchan == 0 || (l.nbits != 4 && l.nbits != 8 && l.nbits != 16))
    usage("--nchan N and --nbits 4, 8 or 16 are required");
  try {
    check(cudaSetDevice(device), "cudaSetDevice");
    rc::Client client(options);
    std::vector<rc::Stream>& streams = client.streams();
    std::vector<std::unique_ptr<MappedSlab>> slabs;
    for (rc::Stream& st : streams)
      slabs.push_back(std::make_unique<MappedSlab>(st.info()));
    uint64_t* d_offsets = nullptr;
    double* d_out = nullptr;
    check(cudaMalloc(&d_offsets, kBatch * sizeof(uint64_t)), "cudaMalloc");
    check(cudaMalloc(&d_out, kBatch * l.nchan * sizeof(double)), "cudaMalloc");
    std::vector<Totals> totals(streams.size());
    for (Totals& t : totals)
      t.power.assign(l.nchan, 0.0);
    std::vector<bool> ended(streams.size(), false);
    std::vector<rc::Frame> batch;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t done = 0; done < streams.size();) {
      bool busy = false;
      done = 0;
      for (std::size_t i = 0; i < streams.size(); ++i) {
        rc::Frame f;
        while (!ended[i] && batch.size() < kBatch) {
          const rc::Event e = streams[i].next(f);
          if (e == rc::Event::none) break;
          busy = true;
          if (e == rc::Event::ended) ended[i] = true;
          if (e != rc::Event::frame) continue;
          ++totals[i].frames;
          if (f.fill()) {
            ++totals[i].fill;
            continue;
          }
          if (!f.data0.empty())
            throw std::runtime_error("stream " + streams[i].info().name +
                                     ": frame data starts in the header slot; set "
                                     "capture.header_split to the UDP payload offset + 64");
          batch.push_back(f);
        }
        run_batch(streams[i], batch, slabs[i]->base, l, totals[i], d_offsets, d_out);
        done += ended[i] ? 1 : 0;
      }
      client.report();
      if (seconds > 0 && std::chrono::steady_clock::now() - start >
                             std::chrono::duration<double>(seconds))
        break;
      if (!busy) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    cudaFree(d_offsets);
    cudaFree(d_out);
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const Totals& t = totals[i];
      std::printf("stream %s (%s, %s memory)\n", streams[i].info().name.c_str(),
                  streams[i].info().format.c_str(), streams[i].info().payload_memory.c_str());
      std::printf("  frames read %llu  missed %llu  fill %llu\n",
                  (unsigned long long)streams[i].frames_read(),
                  (unsigned long long)streams[i].frames_missed(), (unsigned long long)t.fill);
      std::printf("  %u channels, %u-bit %s, %llu time samples\n", l.nchan, l.nbits,
                  l.complex ? "complex" : "real", (unsigned long long)t.samples);
      std::printf("  %7s  %18s  %14s\n", "channel", "power sum |x|^2", "mean/sample");
      for (unsigned c = 0; c < l.nchan; ++c)
        std::printf("  %7u  %18.6g  %14.6g\n", c, t.power[c],
                    t.samples ? t.power[c] / static_cast<double>(t.samples) : 0.0);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rocecap_gpu_power: %s\n", e.what());
    return 1;
  }
  return 0;
}
