// The sim backend's memory source. Fixed segments come from the device arena. Virtual memory
// models CUDA's VMM: a reserved range is an inaccessible host mapping; physical chunks are pages
// of one memory file, so mapping a chunk at two addresses makes them alias as on a GPU, and each
// chunk also takes its bytes from the device arena (so the device's capacity and out_of_memory
// stay real). As in CUDA, a handle released while mapped keeps its memory until its last mapping
// goes, and one unmap may span several adjacent mappings, each whole; a mapping split by an
// unmap is refused, as the driver refuses it.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "alloc/memory_source.hpp"
#include "alloc/sim_faults.hpp"
#include "common/expects.hpp"
#include "streamsafe/error.hpp"

namespace streamsafe::detail {

sim_memory_faults& sim_faults() noexcept {
  static sim_memory_faults faults;
  return faults;
}

namespace {

/// Takes one from `count` when it is not zero; whether it did.
bool take_one(std::atomic<unsigned>& count) noexcept {
  unsigned left = count.load(std::memory_order_relaxed);
  while (left != 0 && !count.compare_exchange_weak(left, left - 1, std::memory_order_relaxed)) {
  }
  return left != 0;
}

}  // namespace

void inject_sim_fault(sim_fault& fault, const char* call, const void* at) {
  if (take_one(fault.passing) || !take_one(fault.failing)) return;
  std::ostringstream what;
  what << "sim: " << call << "(" << at << ") failed (injected by sim_faults)";
  throw cuda_error(what.str(), 999);
}

namespace {

[[noreturn]] void fail(const char* what) {
  SS_EXPECTS(false, "sim: ", what, " failed: ", std::strerror(errno));
  std::abort();
}

class sim_memory final : public memory_source {
 public:
  explicit sim_memory(Device device) : device_(std::move(device)) {}
  ~sim_memory() override {
    for (const auto& [offset, stand_in] : physical_) device_.deallocate(stand_in);
    if (file_ >= 0) ::close(file_);
  }

  void* allocate(std::size_t bytes) override { return device_.allocate(bytes); }
  void deallocate(void* ptr) override {
    inject_sim_fault(sim_faults().frees, "deallocate", ptr);
    device_.deallocate(ptr);
  }

  bool supports_mapping() const override { return true; }
  std::uintptr_t reserve(std::size_t bytes) override {
    void* range = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) {
      throw out_of_memory("sim: cannot reserve " + std::to_string(bytes) + " bytes of virtual address space");
    }
    return reinterpret_cast<std::uintptr_t>(range);
  }
  void free_range(std::uintptr_t address, std::size_t bytes) override {
    ::munmap(reinterpret_cast<void*>(address), bytes);
  }

  physical_handle create_physical(std::size_t granularity) override {
    void* stand_in = device_.allocate(granularity);  // throws out_of_memory when the device is full
    std::lock_guard lock(mutex_);
    open_file();
    std::size_t offset = 0;
    if (auto& same_size = free_offsets_[granularity]; !same_size.empty()) {
      offset = same_size.back();
      same_size.pop_back();
    } else {
      offset = file_bytes_;
      if (::ftruncate(file_, static_cast<off_t>(file_bytes_ + granularity)) != 0) {
        device_.deallocate(stand_in);
        fail("ftruncate of the physical memory file");
      }
      file_bytes_ += granularity;
    }
    physical_.emplace(offset, stand_in);
    return offset;
  }
  void release_physical(physical_handle handle, std::size_t granularity) override {
    inject_sim_fault(sim_faults().releases, "release_physical", reinterpret_cast<const void*>(handle));
    std::lock_guard lock(mutex_);
    SS_EXPECTS(physical_.count(handle) != 0 && !released_.count(handle),
               "sim: release of physical memory that was not created, or released already");
    if (mappings_[handle] != 0) {
      released_.emplace(handle, granularity);  // goes with its last mapping
      return;
    }
    free_physical(handle, granularity);
  }
  void map_physical(std::uintptr_t address, physical_handle handle, std::size_t granularity) override {
    inject_sim_fault(sim_faults().maps, "map_physical", reinterpret_cast<void*>(address));
    std::lock_guard lock(mutex_);
    expect_unmapped(address, granularity);
    void* at = ::mmap(reinterpret_cast<void*>(address), granularity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                      file_, static_cast<off_t>(handle));
    if (at == MAP_FAILED) fail("mmap of a physical chunk");
    ++mappings_[handle];
    mapped_at_[address] = {handle, granularity};
  }
  void grant_access(std::uintptr_t, std::size_t) override {}  // mapped readable and writable
  void unmap_physical(std::uintptr_t address, std::size_t bytes) override {
    inject_sim_fault(sim_faults().unmaps, "unmap_physical", reinterpret_cast<void*>(address));
    std::lock_guard lock(mutex_);
    const std::vector<mapping_list::iterator> whole = mappings_spanning(address, bytes);
    // Back to reserved and inaccessible, as cuMemUnmap leaves it.
    void* at = ::mmap(reinterpret_cast<void*>(address), bytes, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (at == MAP_FAILED) fail("mmap over an unmapped chunk");
    for (const mapping_list::iterator it : whole) {
      const physical_handle handle = it->second.handle;
      mapped_at_.erase(it);
      if (--mappings_[handle] == 0) {
        if (const auto released = released_.find(handle); released != released_.end()) {
          const std::size_t granularity = released->second;
          released_.erase(released);
          free_physical(handle, granularity);
        }
      }
    }
  }
  memory_info memory() override { return device_.memory(); }

 private:
  struct mapping {
    physical_handle handle;
    std::size_t bytes;
  };
  using mapping_list = std::map<std::uintptr_t, mapping>;
  // A map over a mapped byte is refused, as cuMemMap refuses it; caller holds mutex_.
  void expect_unmapped(std::uintptr_t address, std::size_t bytes) const {
    const auto next = mapped_at_.lower_bound(address);
    const bool overlaps_next = next != mapped_at_.end() && next->first < address + bytes;
    const bool overlaps_previous =
        next != mapped_at_.begin() && std::prev(next)->first + std::prev(next)->second.bytes > address;
    SS_EXPECTS(!overlaps_next && !overlaps_previous, "sim: map of [", reinterpret_cast<void*>(address), ", +", bytes,
               ") over a range already mapped");
  }
  // The mappings that [address, address + bytes) covers, each whole, from its first byte to its
  // last with none missing between; caller holds mutex_.
  std::vector<mapping_list::iterator> mappings_spanning(std::uintptr_t address, std::size_t bytes) {
    std::vector<mapping_list::iterator> whole;
    std::uintptr_t at = address;
    while (at < address + bytes) {
      const auto it = mapped_at_.find(at);
      SS_EXPECTS(it != mapped_at_.end(), "sim: unmap of [", reinterpret_cast<void*>(address), ", +", bytes,
                 ") where nothing begins a mapping at ", reinterpret_cast<void*>(at));
      SS_EXPECTS(at + it->second.bytes <= address + bytes, "sim: unmap of [", reinterpret_cast<void*>(address),
                 ", +", bytes, ") splits the mapping at ", reinterpret_cast<void*>(at));
      whole.push_back(it);
      at += it->second.bytes;
    }
    return whole;
  }
  void free_physical(physical_handle handle, std::size_t granularity) {  // caller holds mutex_
    mappings_.erase(handle);
    // The pages go back to the host now.
    ::fallocate(file_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(handle),
                static_cast<off_t>(granularity));
    const auto it = physical_.find(handle);
    device_.deallocate(it->second);
    physical_.erase(it);
    free_offsets_[granularity].push_back(handle);
  }

  void open_file() {  // caller holds mutex_
    if (file_ >= 0) return;
    file_ = ::memfd_create("streamsafe-sim-physical", MFD_CLOEXEC);
    if (file_ < 0) fail("memfd_create");
  }

  Device device_;
  std::mutex mutex_;
  int file_ = -1;
  std::size_t file_bytes_ = 0;
  std::map<std::size_t, std::vector<std::size_t>> free_offsets_;  // by size: a hole fits its own size
  std::unordered_map<physical_handle, void*> physical_;  // file offset -> its arena stand-in
  std::unordered_map<physical_handle, std::size_t> mappings_;  // file offset -> addresses mapping it
  mapping_list mapped_at_;  // by the address each mapping begins at
  std::unordered_map<physical_handle, std::size_t> released_;  // released while mapped: its bytes
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
