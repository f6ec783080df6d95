// Device layer of a build without CUDA (OOMLAB_CUDA=OFF): only `sim` can run.
#include "device/device.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {
constexpr const char* kNoCuda =
    "no CUDA driver/device found: this oomlab was built without CUDA (OOMLAB_CUDA=OFF)";
}

std::string cuda_error_name(int code) {
  return code == 2 ? "cudaErrorMemoryAllocation" : "cudaError(" + std::to_string(code) + ")";
}

Environment probe_environment() {
  Environment env;
  env.cuda_problem = kNoCuda;
  env.driver_version = read_driver_version();
  env.host = host_name();
  return env;
}

Environment probe_host_environment() {
  Environment env;
  env.cuda_problem = kNoCuda;
  env.driver_version = driver_version_from_proc();
  env.host = host_name();
  return env;
}

DeviceSession::DeviceSession(int device) : device_(device) {
  throw Error(ErrorKind::no_device, kNoCuda);
}
DeviceSession::~DeviceSession() = default;
// The CUDA build's versions of these read and change the device: members there, members here.
// NOLINTBEGIN(readability-convert-member-functions-to-static)
std::uint64_t DeviceSession::free_bytes() const {
  return 0;
}
std::uint64_t DeviceSession::total_bytes() const {
  return 0;
}
void DeviceSession::synchronize() const {
}
void DeviceSession::trim_default_pool() const {
}
Stream DeviceSession::create_stream() {
  return {};
}
// NOLINTEND(readability-convert-member-functions-to-static)

Ballast::Ballast(std::uint64_t bytes) : bytes_(bytes) {
  throw Error(ErrorKind::no_device, kNoCuda);
}
Ballast::~Ballast() = default;

}  // namespace oomlab
