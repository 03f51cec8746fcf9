// The sim backend's memory source. Fixed segments come from the device arena. Expandable ones
// model CUDA's VMM: the virtual range is an inaccessible host mapping; mapping a chunk takes
// the same number of bytes from the device arena (so the device's capacity and out_of_memory
// stay real) and makes the host pages accessible; unmapping returns both.
#include <sys/mman.h>

#include <mutex>
#include <unordered_map>

#include "alloc/memory_source.hpp"
#include "common/expects.hpp"

namespace streamsafe::detail {

namespace {

class sim_memory final : public memory_source {
 public:
  explicit sim_memory(Device device) : device_(std::move(device)) {}
  ~sim_memory() override {
    for (const auto& [address, physical] : physical_) device_.deallocate(physical);
  }

  void* allocate(std::size_t bytes) override { return device_.allocate(bytes); }
  void deallocate(void* ptr) override { device_.deallocate(ptr); }

  bool supports_mapping() const override { return true; }
  std::uintptr_t reserve(std::size_t bytes) override {
    void* range = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) {
      throw out_of_memory("sim: cannot reserve " + std::to_string(bytes) + " bytes of virtual address space");
    }
    return reinterpret_cast<std::uintptr_t>(range);
  }
  void release(std::uintptr_t address, std::size_t bytes) override {
    {
      std::lock_guard lock(mutex_);
      for (auto it = physical_.begin(); it != physical_.end();) {
        if (it->first >= address && it->first < address + bytes) {
          device_.deallocate(it->second);
          it = physical_.erase(it);
        } else {
          ++it;
        }
      }
    }
    ::munmap(reinterpret_cast<void*>(address), bytes);
  }
  void map_chunk(std::uintptr_t address, std::size_t granularity) override {
    void* physical = device_.allocate(granularity);  // throws out_of_memory when the device is full
    std::lock_guard lock(mutex_);
    physical_.emplace(address, physical);
    SS_EXPECTS(::mprotect(reinterpret_cast<void*>(address), granularity, PROT_READ | PROT_WRITE) == 0,
               "sim: mprotect failed while mapping a chunk");
  }
  void unmap_chunk(std::uintptr_t address, std::size_t granularity) override {
    std::lock_guard lock(mutex_);
    auto it = physical_.find(address);
    SS_EXPECTS(it != physical_.end(), "sim: unmap of a chunk that is not mapped");
    ::madvise(reinterpret_cast<void*>(address), granularity, MADV_DONTNEED);
    ::mprotect(reinterpret_cast<void*>(address), granularity, PROT_NONE);
    device_.deallocate(it->second);
    physical_.erase(it);
  }
  memory_info memory() override { return device_.memory(); }

 private:
  Device device_;
  std::mutex mutex_;
  std::unordered_map<std::uintptr_t, void*> physical_;  // chunk address -> its arena stand-in
};

}  // namespace

std::unique_ptr<memory_source> make_memory_source(const Device& device) {
  switch (device.backend()) {
    case backend_kind::cuda: return make_cuda_memory_source(device);
    case backend_kind::sim: return std::make_unique<sim_memory>(device);
  }
  SS_EXPECTS(false, "unknown backend");
  return nullptr;
}

}  // namespace streamsafe::detail
