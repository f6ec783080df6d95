#include <cuda.h>  // types only: libcuda is never linked, its calls come through the runtime
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "device/cuda_check.hpp"
#include "device/device.hpp"
#include "device/nvml.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

std::string format_uuid(const cudaUUID_t& uuid) {
  std::string hex;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) hex += '-';
    hex += fmt::format("{:02x}", static_cast<unsigned char>(uuid.bytes[i]));
  }
  return "GPU-" + hex;
}

// Reached through the runtime's driver entry point, never by linking libcuda.
std::uint64_t vmm_granularity(int device) {
  PFN_cuMemGetAllocationGranularity_v10020 get_granularity = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuMemGetAllocationGranularity",
                                       reinterpret_cast<void**>(&get_granularity), 10020,
                                       cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || get_granularity == nullptr) {
    (void)cudaGetLastError();
    return 0;
  }
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t granularity = 0;
  if (get_granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS)
    return 0;
  return granularity;
}

bool attribute(cudaDeviceAttr attr, int device) {
  int value = 0;
  if (cudaDeviceGetAttribute(&value, attr, device) != cudaSuccess) {
    (void)cudaGetLastError();  // unknown means no, and must not fail a later launch check
    return false;
  }
  return value != 0;
}

// Facts that need no context on the device: properties, attributes, NVML's memory figures.
DeviceFacts read_device(int index, const Nvml& nvml) {
  DeviceFacts facts;
  facts.index = index;
  cudaDeviceProp prop{};
  OOMLAB_CUDA_TRY(cudaGetDeviceProperties(&prop, index));
  facts.name = prop.name;
  facts.uuid = format_uuid(prop.uuid);
  facts.compute_capability = fmt::format("{}.{}", prop.major, prop.minor);
  facts.pci_bus_id =
      fmt::format("{:04x}:{:02x}:{:02x}.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  facts.multiprocessors = prop.multiProcessorCount;
  facts.memory_pools = attribute(cudaDevAttrMemoryPoolsSupported, index);
  facts.managed_memory = attribute(cudaDevAttrManagedMemory, index);
  facts.concurrent_managed_access = attribute(cudaDevAttrConcurrentManagedAccess, index);
  facts.total_bytes = prop.totalGlobalMem;
  if (const auto memory = nvml.memory(facts.uuid)) {
    facts.free_bytes = memory->free;
    facts.nvml_total_bytes = memory->total;
  }
  facts.vmm_granularity = vmm_granularity(index);
  return facts;
}

// Why no device can be used, or "" when one can.
std::string device_problem(int driver_api, int* count) {
  *count = 0;
  if (driver_api == 0) return "no CUDA driver/device found: no NVIDIA driver is loaded";
  const cudaError_t status = cudaGetDeviceCount(count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    *count = 0;
    return fmt::format("no CUDA driver/device found: {} ({})", cudaGetErrorName(status),
                       cudaGetErrorString(status));
  }
  if (*count == 0) return "no CUDA driver/device found: the driver sees no device";
  return {};
}

}  // namespace

std::string cuda_error_name(int code) {
  return cudaGetErrorName(static_cast<cudaError_t>(code));
}

Environment probe_environment() {
  Environment env;
  env.cuda_built = true;
  env.host = host_name();
  const Nvml nvml;
  env.driver_version = nvml.driver_version();
  if (!env.driver_version) env.driver_version = read_driver_version();
  (void)cudaDriverGetVersion(&env.cuda_driver_api);
  (void)cudaRuntimeGetVersion(&env.cuda_runtime);
  int count = 0;
  env.cuda_problem = device_problem(env.cuda_driver_api, &count);
  for (int i = 0; i < count; ++i) {
    try {
      env.devices.push_back(read_device(i, nvml));
    } catch (const Error& e) {
      env.cuda_problem = fmt::format("device {}: {}", i, e.what());
    }
  }
  return env;
}

Environment probe_host_environment() {
  Environment env;
  env.cuda_built = true;
  env.host = host_name();
  env.driver_version = driver_version_from_proc();
  (void)cudaRuntimeGetVersion(&env.cuda_runtime);  // the linked runtime's number: no driver call
  return env;
}

DeviceSession::DeviceSession(int device) : device_(device) {
  int driver_api = 0;
  (void)cudaDriverGetVersion(&driver_api);
  int count = 0;
  if (std::string problem = device_problem(driver_api, &count); !problem.empty()) {
    throw Error(ErrorKind::no_device, problem);
  }
  if (device < 0 || device >= count) {
    throw Error(ErrorKind::no_device,
                fmt::format("device {} does not exist: {} CUDA device{} present (0..{})", device,
                            count, count == 1 ? " is" : "s are", count - 1));
  }
  OOMLAB_CUDA_TRY(cudaSetDevice(device));
  OOMLAB_CUDA_TRY(cudaFree(nullptr));  // create the context now, not inside the run
  cudaStream_t stream = nullptr;
  OOMLAB_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = Stream{stream};
}

DeviceSession::~DeviceSession() {
  for (const Stream s : more_streams_) {
    (void)cudaStreamSynchronize(static_cast<cudaStream_t>(s.handle));
    (void)cudaStreamDestroy(static_cast<cudaStream_t>(s.handle));
  }
  auto* const stream = static_cast<cudaStream_t>(stream_.handle);
  (void)cudaStreamSynchronize(stream);
  (void)cudaStreamDestroy(stream);
}

Stream DeviceSession::create_stream() {
  cudaStream_t stream = nullptr;
  OOMLAB_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  more_streams_.push_back(Stream{stream});
  return more_streams_.back();
}

std::uint64_t DeviceSession::free_bytes() const {
  OOMLAB_CUDA_TRY(cudaSetDevice(device_));
  std::size_t free = 0;
  std::size_t total = 0;
  OOMLAB_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return free;
}

std::uint64_t DeviceSession::total_bytes() const {
  OOMLAB_CUDA_TRY(cudaSetDevice(device_));
  std::size_t free = 0;
  std::size_t total = 0;
  OOMLAB_CUDA_TRY(cudaMemGetInfo(&free, &total));
  return total;
}

void DeviceSession::synchronize() const {
  OOMLAB_CUDA_TRY(cudaSetDevice(device_));
  OOMLAB_CUDA_TRY(cudaDeviceSynchronize());
}

void DeviceSession::trim_default_pool() const {
  cudaMemPool_t pool = nullptr;
  if (cudaDeviceGetDefaultMemPool(&pool, device_) != cudaSuccess) {
    (void)cudaGetLastError();  // no pools on this device: nothing to trim
    return;
  }
  OOMLAB_CUDA_TRY(cudaDeviceSynchronize());
  OOMLAB_CUDA_TRY(cudaMemPoolTrimTo(pool, 0));
}

Ballast::Ballast(std::uint64_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t status = cudaMalloc(&ptr_, bytes);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw Error(ErrorKind::device,
                fmt::format("could not hold a ballast of {} to cap the budget: {}",
                            format_bytes(bytes), cudaGetErrorName(status)));
  }
}

Ballast::~Ballast() {
  if (ptr_ != nullptr) (void)cudaFree(ptr_);
}

}  // namespace oomlab
