#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
int main(int argc, char**) {
  const size_t n = 60u << 20;
  for (int mode = 0; mode < 3; ++mode) {
    auto t0 = std::chrono::steady_clock::now();
    char* p;
    if (mode == 0) p = (char*)malloc(n);
    else {
      size_t al = 2u << 20;
      char* raw = (char*)mmap(nullptr, n + al, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
      p = (char*)(((uintptr_t)raw + al - 1) & ~(al - 1));
      if (mode == 2) madvise(p, n, MADV_HUGEPAGE);
    }
    for (size_t i = 0; i < n; i += 4096) p[i] = 1;
    auto t1 = std::chrono::steady_clock::now();
    printf("mode %d: %.1f ms\n", mode, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
}
