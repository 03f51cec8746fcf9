// All-reduce bus bandwidth sweep, one process per GPU, NCCL directly: the ceiling the sync
// stage is judged against. Reports, per size, the time of one all-reduce and, as nccl-tests
// define them, algbw = bytes / time and busbw = algbw * 2 (n - 1) / n.
//
//   allreduce_sweep --rank R --nranks N --id-file PATH [--min-bytes 8192] [--max-bytes 1073741824]
//                   [--iters 20] [--warmup 5]
//
// Rank 0 writes the ncclUniqueId to PATH (atomically, through a rename); the other ranks wait
// for it. Rank R uses GPU R of the visible ones. Rank 0 prints the table.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(call) + ": " + cudaGetErrorName(status));
}

void check_nccl(ncclResult_t status, const char* call) {
  if (status != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(status));
}

#define CUDA(call) check_cuda((call), #call)
#define NCCL(call) check_nccl((call), #call)

struct options {
  int rank = 0;
  int nranks = 1;
  std::string id_file;
  std::size_t min_bytes = 8192;
  std::size_t max_bytes = std::size_t{1} << 30;
  int iters = 20;
  int warmup = 5;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--rank") o.rank = std::atoi(value);
    else if (flag == "--nranks") o.nranks = std::atoi(value);
    else if (flag == "--id-file") o.id_file = value;
    else if (flag == "--min-bytes") o.min_bytes = std::strtoull(value, nullptr, 10);
    else if (flag == "--max-bytes") o.max_bytes = std::strtoull(value, nullptr, 10);
    else if (flag == "--iters") o.iters = std::atoi(value);
    else if (flag == "--warmup") o.warmup = std::atoi(value);
    else throw std::runtime_error("unknown flag " + flag);
  }
  if (o.id_file.empty() || o.nranks < 1 || o.rank < 0 || o.rank >= o.nranks) {
    throw std::runtime_error("usage: allreduce_sweep --rank R --nranks N --id-file PATH [--min-bytes B] "
                             "[--max-bytes B] [--iters N] [--warmup N]");
  }
  return o;
}

ncclUniqueId share_id(const options& o) {
  ncclUniqueId id;
  if (o.rank == 0) {
    NCCL(ncclGetUniqueId(&id));
    const std::string tmp = o.id_file + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof(id));
    if (std::rename(tmp.c_str(), o.id_file.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp);
    return id;
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    std::ifstream in(o.id_file, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(&id), sizeof(id))) return id;
    if (std::chrono::steady_clock::now() > give_up) throw std::runtime_error("no unique id in " + o.id_file);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Every rank's input bytes are 0x3f: the float 0x3f3f3f3f. The sum over n ranks is checked.
constexpr unsigned char fill_byte = 0x3f;

float input_value() {
  float v;
  const unsigned bits = 0x3f3f3f3fU;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

bool check_result(const float* recv, std::size_t count, int nranks) {
  float first = 0;
  float last = 0;
  CUDA(cudaMemcpy(&first, recv, sizeof(float), cudaMemcpyDeviceToHost));
  CUDA(cudaMemcpy(&last, recv + count - 1, sizeof(float), cudaMemcpyDeviceToHost));
  const float expected = input_value() * static_cast<float>(nranks);
  return std::fabs(first - expected) < 1e-3F * expected && std::fabs(last - expected) < 1e-3F * expected;
}

// The sync stage's per-step order check all-gathers 1048 bytes per rank (24 + 64 x 16: see
// src/pipeline/collectives/order_wire.hpp); its cost per step is this all-gather's time.
void time_order_exchange(const options& o, ncclComm_t comm, cudaStream_t stream) {
  constexpr std::size_t record_bytes = 1048;
  constexpr int iters = 100;
  void* send = nullptr;
  void* recv = nullptr;
  CUDA(cudaMalloc(&send, record_bytes));
  CUDA(cudaMalloc(&recv, record_bytes * o.nranks));
  cudaEvent_t start;
  cudaEvent_t stop;
  CUDA(cudaEventCreate(&start));
  CUDA(cudaEventCreate(&stop));
  for (int i = 0; i < o.warmup; ++i) NCCL(ncclAllGather(send, recv, record_bytes, ncclChar, comm, stream));
  CUDA(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) NCCL(ncclAllGather(send, recv, record_bytes, ncclChar, comm, stream));
  CUDA(cudaEventRecord(stop, stream));
  CUDA(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA(cudaEventElapsedTime(&ms, start, stop));
  if (o.rank == 0) std::printf("# order exchange: all-gather of %zu B per rank: %.2f us\n", record_bytes, ms * 1e3 / iters);
  CUDA(cudaEventDestroy(start));
  CUDA(cudaEventDestroy(stop));
  CUDA(cudaFree(send));
  CUDA(cudaFree(recv));
}

void sweep(const options& o, ncclComm_t comm, cudaStream_t stream) {
  void* send = nullptr;
  void* recv = nullptr;
  CUDA(cudaMalloc(&send, o.max_bytes));
  CUDA(cudaMalloc(&recv, o.max_bytes));
  CUDA(cudaMemset(send, fill_byte, o.max_bytes));
  cudaEvent_t start;
  cudaEvent_t stop;
  CUDA(cudaEventCreate(&start));
  CUDA(cudaEventCreate(&stop));
  const double bus_factor = 2.0 * (o.nranks - 1) / o.nranks;
  if (o.rank == 0) {
    std::printf("# ranks %d, iters %d, warmup %d, float32 sum, out of place\n", o.nranks, o.iters, o.warmup);
    std::printf("%12s %12s %12s %10s %10s %6s\n", "bytes", "count", "time_us", "algbw_GBs", "busbw_GBs", "check");
  }
  for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const std::size_t count = bytes / sizeof(float);
    for (int i = 0; i < o.warmup; ++i) NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream));
    CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < o.iters; ++i) NCCL(ncclAllReduce(send, recv, count, ncclFloat32, ncclSum, comm, stream));
    CUDA(cudaEventRecord(stop, stream));
    CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA(cudaEventElapsedTime(&ms, start, stop));
    const double seconds = ms / 1e3 / o.iters;
    const double algbw = static_cast<double>(bytes) / seconds / 1e9;
    const bool ok = check_result(static_cast<const float*>(recv), count, o.nranks);
    if (o.rank == 0) {
      std::printf("%12zu %12zu %12.2f %10.2f %10.2f %6s\n", bytes, count, seconds * 1e6, algbw, algbw * bus_factor,
                  ok ? "ok" : "WRONG");
      std::fflush(stdout);
    }
  }
  CUDA(cudaEventDestroy(start));
  CUDA(cudaEventDestroy(stop));
  CUDA(cudaFree(send));
  CUDA(cudaFree(recv));
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const options o = parse(argc, argv);
    int devices = 0;
    CUDA(cudaGetDeviceCount(&devices));
    if (devices < 1) throw std::runtime_error("no CUDA device");
    CUDA(cudaSetDevice(o.rank % devices));
    const ncclUniqueId id = share_id(o);
    ncclComm_t comm = nullptr;
    NCCL(ncclCommInitRank(&comm, o.nranks, id, o.rank));
    cudaStream_t stream = nullptr;
    CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (o.rank == 0) {
      int version = 0;
      NCCL(ncclGetVersion(&version));
      cudaDeviceProp prop{};
      CUDA(cudaGetDeviceProperties(&prop, o.rank % devices));
      std::printf("# NCCL %d, %s, %d visible GPU(s)\n", version, prop.name, devices);
    }
    sweep(o, comm, stream);
    time_order_exchange(o, comm, stream);
    CUDA(cudaStreamDestroy(stream));
    NCCL(ncclCommDestroy(comm));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_sweep: %s\n", e.what());
    return 1;
  }
}
