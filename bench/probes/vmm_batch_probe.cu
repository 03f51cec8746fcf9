// Probes what the CUDA driver allows of virtual memory management calls over several mappings at
// once, and what each call costs: one cuMemSetAccess and one cuMemUnmap over a range that spans
// several adjacent mappings (each its own cuMemCreate), a sub-range spanning whole mappings, a
// sub-range of one mapping, and whether releasing a handle right after mapping it keeps the
// memory until the unmap. Prints one line per probe; exits 1 when a call it needs fails.
//   nvcc -O2 -arch=sm_90 bench/probes/vmm_batch_probe.cu -lcuda -o vmm_batch_probe
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <vector>

namespace {

const char* name_of(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s != nullptr ? s : "?";
}

#define CHECK(call)                                                             \
  do {                                                                          \
    CUresult r_ = (call);                                                       \
    if (r_ != CUDA_SUCCESS) {                                                   \
      std::printf("FAILED %s at line %d: %s\n", #call, __LINE__, name_of(r_)); \
      return 1;                                                                 \
    }                                                                           \
  } while (0)

size_t free_bytes() {
  size_t free = 0, total = 0;
  cuMemGetInfo(&free, &total);
  return free;
}

struct region {
  CUdeviceptr base = 0;
  size_t chunk = 0;
  int chunks = 0;
};

CUmemAllocationProp prop_for(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

CUmemAccessDesc access_for(int device) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return access;
}

// Maps `chunks` handles of `chunk` bytes side by side at `base`, releasing each handle at once
// when `release_now`; access is set once over the whole range.
int map_side_by_side(const region& r, int device, bool release_now, std::vector<CUmemGenericAllocationHandle>& kept) {
  const CUmemAllocationProp prop = prop_for(device);
  for (int i = 0; i < r.chunks; ++i) {
    CUmemGenericAllocationHandle h;
    CHECK(cuMemCreate(&h, r.chunk, &prop, 0));
    CHECK(cuMemMap(r.base + i * r.chunk, r.chunk, 0, h, 0));
    if (release_now) {
      CHECK(cuMemRelease(h));
    } else {
      kept.push_back(h);
    }
  }
  const CUmemAccessDesc access = access_for(device);
  CHECK(cuMemSetAccess(r.base, r.chunk * r.chunks, &access, 1));
  return 0;
}

bool bytes_hold(CUdeviceptr p, size_t bytes, unsigned char value) {
  if (cudaMemset(reinterpret_cast<void*>(p), value, bytes) != cudaSuccess) return false;
  std::vector<unsigned char> host(bytes);
  if (cudaMemcpy(host.data(), reinterpret_cast<void*>(p), bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return false;
  for (unsigned char c : host) {
    if (c != value) return false;
  }
  return true;
}

}  // namespace

int main() {
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  cudaFree(nullptr);
  const CUmemAllocationProp prop = prop_for(0);
  size_t granularity = 0;
  CHECK(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  const int chunks = 64;
  region r{0, granularity, chunks};
  CHECK(cuMemAddressReserve(&r.base, granularity * chunks, 0, 0, 0));
  std::printf("granularity %zu bytes, %d chunks\n", granularity, chunks);

  // 1. Handles released at once; one access call and one unmap over all the mappings.
  std::vector<CUmemGenericAllocationHandle> kept;
  const size_t before = free_bytes();
  if (map_side_by_side(r, 0, true, kept) != 0) return 1;
  const size_t mapped = free_bytes();
  std::printf("released at once, mapped: free fell by %zu bytes (expected %zu); bytes hold: %d\n", before - mapped,
              granularity * chunks, bytes_hold(r.base, granularity * chunks, 0x5a));
  CUresult whole = cuMemUnmap(r.base, granularity * chunks);
  std::printf("one cuMemUnmap over %d mappings: %s; free back up by %zu bytes\n", chunks, name_of(whole),
              free_bytes() - mapped);

  // 2. A sub-range of whole mappings (chunks 8..23), then the rest around it.
  if (map_side_by_side(r, 0, true, kept) != 0) return 1;
  const size_t mapped2 = free_bytes();
  CUresult sub = cuMemUnmap(r.base + 8 * granularity, 16 * granularity);
  std::printf("cuMemUnmap over mappings 8-23 of %d: %s; freed %zu bytes; chunk 24 still holds: %d\n", chunks,
              name_of(sub), free_bytes() - mapped2, bytes_hold(r.base + 24 * granularity, granularity, 0x33));
  CUresult head = cuMemUnmap(r.base, 8 * granularity);
  CUresult tail = cuMemUnmap(r.base + 24 * granularity, (chunks - 24) * granularity);
  std::printf("the rest: head %s, tail %s\n", name_of(head), name_of(tail));

  // 3. Half of one mapping.
  if (map_side_by_side(r, 0, true, kept) != 0) return 1;
  CUresult half = cuMemUnmap(r.base, granularity / 2);
  std::printf("cuMemUnmap of half a mapping: %s\n", name_of(half));
  CHECK(cuMemUnmap(r.base, granularity * chunks));

  // 4. Costs, microseconds per call, over the same 64 chunks: per-chunk (create, map, access,
  // unmap, release) against released at once with one access and one unmap.
  using clock = std::chrono::steady_clock;
  const auto us = [](clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); };
  const CUmemAccessDesc access = access_for(0);
  for (int round = 0; round < 3; ++round) {
    std::vector<CUmemGenericAllocationHandle> hs(chunks);
    auto t0 = clock::now();
    for (int i = 0; i < chunks; ++i) CHECK(cuMemCreate(&hs[i], granularity, &prop, 0));
    auto t1 = clock::now();
    for (int i = 0; i < chunks; ++i) CHECK(cuMemMap(r.base + i * granularity, granularity, 0, hs[i], 0));
    auto t2 = clock::now();
    for (int i = 0; i < chunks; ++i) CHECK(cuMemSetAccess(r.base + i * granularity, granularity, &access, 1));
    auto t3 = clock::now();
    for (int i = 0; i < chunks; ++i) CHECK(cuMemUnmap(r.base + i * granularity, granularity));
    auto t4 = clock::now();
    for (int i = 0; i < chunks; ++i) CHECK(cuMemRelease(hs[i]));
    auto t5 = clock::now();
    for (int i = 0; i < chunks; ++i) {
      CHECK(cuMemCreate(&hs[i], granularity, &prop, 0));
      CHECK(cuMemMap(r.base + i * granularity, granularity, 0, hs[i], 0));
      CHECK(cuMemRelease(hs[i]));
    }
    auto t6 = clock::now();
    CHECK(cuMemSetAccess(r.base, granularity * chunks, &access, 1));
    auto t7 = clock::now();
    CHECK(cuMemUnmap(r.base, granularity * chunks));
    auto t8 = clock::now();
    std::printf("round %d, us per chunk: create %.1f map %.1f access %.1f unmap %.1f release %.1f | "
                "create+map+release %.1f, one access over all %.1f us, one unmap over all %.1f us\n",
                round, us(t1 - t0) / chunks, us(t2 - t1) / chunks, us(t3 - t2) / chunks, us(t4 - t3) / chunks,
                us(t5 - t4) / chunks, us(t6 - t5) / chunks, us(t7 - t6), us(t8 - t7));
  }
  CHECK(cuMemAddressFree(r.base, granularity * chunks));
  std::printf("done\n");
  return 0;
}
