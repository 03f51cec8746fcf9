// The cuda backend's memory source: cudaMalloc/cudaFree for fixed segments, the driver's VMM
// API (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess) for expandable ones. The
// driver functions are looked up through the runtime (cudaGetDriverEntryPoint), so nothing links
// libcuda.so and programs still start on machines without a GPU driver.
#include <cuda.h>
#include <cuda_runtime_api.h>


#include "alloc/memory_source.hpp"
#include "common/expects.hpp"
#include "runtime/cuda/cuda_check.hpp"

namespace streamsafe::detail {

namespace {

/// The driver entry points this file uses; null members when the driver lacks them.
struct driver_api {
  decltype(&cuGetErrorName) get_error_name = nullptr;
  decltype(&cuDeviceGet) device_get = nullptr;
  decltype(&cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&cuMemAddressReserve) address_reserve = nullptr;
  decltype(&cuMemAddressFree) address_free = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;

  [[nodiscard]] bool complete() const noexcept {
    return get_error_name && device_get && device_get_attribute && address_reserve && address_free && create &&
           release && map && unmap && set_access;
  }
};

template <typename Function>
void look_up(const char* symbol, Function& function) {
  void* found = nullptr;
  cudaDriverEntryPointQueryResult status{};
#if CUDART_VERSION >= 12050
  if (cudaGetDriverEntryPointByVersion(symbol, &found, 12000, cudaEnableDefault, &status) != cudaSuccess) found = nullptr;
#else
  if (cudaGetDriverEntryPoint(symbol, &found, cudaEnableDefault, &status) != cudaSuccess) found = nullptr;
#endif
  function = reinterpret_cast<Function>(found);
}

const driver_api& driver() {
  static const driver_api api = [] {
    driver_api loaded;
    look_up("cuGetErrorName", loaded.get_error_name);
    look_up("cuDeviceGet", loaded.device_get);
    look_up("cuDeviceGetAttribute", loaded.device_get_attribute);
    look_up("cuMemAddressReserve", loaded.address_reserve);
    look_up("cuMemAddressFree", loaded.address_free);
    look_up("cuMemCreate", loaded.create);
    look_up("cuMemRelease", loaded.release);
    look_up("cuMemMap", loaded.map);
    look_up("cuMemUnmap", loaded.unmap);
    look_up("cuMemSetAccess", loaded.set_access);
    return loaded;
  }();
  return api;
}

[[noreturn]] void throw_driver_error(CUresult status, const char* call) {
  const char* name = nullptr;
  driver().get_error_name(status, &name);
  const std::string what = std::string(call) + " failed: " + (name != nullptr ? name : "unknown");
  if (status == CUDA_ERROR_OUT_OF_MEMORY) throw out_of_memory(what);
  throw cuda_error(what, static_cast<int>(status));
}

#define SS_CU_TRY(call)                                          \
  do {                                                           \
    const CUresult ss_result_ = (call);                          \
    if (ss_result_ != CUDA_SUCCESS) throw_driver_error(ss_result_, #call); \
  } while (0)

class cuda_memory final : public memory_source {
 public:
  explicit cuda_memory(Device device) : device_(std::move(device)) {
    int vmm = 0;
    CUdevice handle = 0;
    if (driver().complete() && driver().device_get(&handle, device_.ordinal()) == CUDA_SUCCESS &&
        driver().device_get_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, handle) == CUDA_SUCCESS) {
      supports_mapping_ = vmm != 0;
    }
  }

  void* allocate(std::size_t bytes) override { return device_.allocate(bytes); }
  void deallocate(void* ptr) override { device_.deallocate(ptr); }

  bool supports_mapping() const override { return supports_mapping_; }
  std::uintptr_t reserve(std::size_t bytes) override {
    CUdeviceptr address = 0;
    SS_CU_TRY(driver().address_reserve(&address, bytes, 0, 0, 0));
    return static_cast<std::uintptr_t>(address);
  }
  void free_range(std::uintptr_t address, std::size_t bytes) override { driver().address_free(address, bytes); }

  physical_handle create_physical(std::size_t granularity) override {
    const CUmemAllocationProp prop = device_memory();
    CUmemGenericAllocationHandle handle = 0;
    SS_CU_TRY(driver().create(&handle, granularity, &prop, 0));
    return static_cast<physical_handle>(handle);
  }
  void release_physical(physical_handle handle, std::size_t) override { SS_CU_TRY(driver().release(handle)); }
  void map_physical(std::uintptr_t address, physical_handle handle, std::size_t granularity) override {
    SS_CU_TRY(driver().map(address, granularity, 0, handle, 0));
  }
  void grant_access(std::uintptr_t address, std::size_t bytes) override {
    CUmemAccessDesc access{};
    access.location = device_memory().location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    SS_CU_TRY(driver().set_access(address, bytes, &access, 1));
  }
  void unmap_physical(std::uintptr_t address, std::size_t bytes) override {
    SS_CU_TRY(driver().unmap(address, bytes));
  }
  memory_info memory() override { return device_.memory(); }

 private:
  [[nodiscard]] CUmemAllocationProp device_memory() const noexcept {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_.ordinal();
    return prop;
  }

  Device device_;
  bool supports_mapping_ = false;
};

}  // namespace

std::unique_ptr<memory_source> make_cuda_memory_source(const Device& device) {
  return std::make_unique<cuda_memory>(device);
}

}  // namespace streamsafe::detail
