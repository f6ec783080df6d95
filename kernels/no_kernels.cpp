// The kernels in a build without CUDA: nothing can launch them, since no device backend exists.
#include "kernels/kernels.hpp"
#include "oomlab/error.hpp"

namespace oomlab::kernels {

namespace {
[[noreturn]] void no_cuda() {
  throw Error(ErrorKind::no_device, "this oomlab was built without CUDA");
}
}  // namespace

void preload() {
}
void touch(void* /*ptr*/, std::size_t /*bytes*/, Stream /*stream*/) {
  no_cuda();
}
void fill(void* /*ptr*/, std::size_t /*bytes*/, std::uint64_t /*seed*/, Stream /*stream*/) {
  no_cuda();
}
void cast(const float* /*source*/, void* /*target*/, std::size_t /*count*/, Precision /*precision*/,
          Stream /*stream*/) {
  no_cuda();
}
void wait(Stream /*stream*/) {
  no_cuda();
}
MismatchCounter::MismatchCounter() {
  no_cuda();
}
MismatchCounter::~MismatchCounter() = default;
std::uint64_t MismatchCounter::verify(const void* /*ptr*/, std::size_t /*bytes*/,
                                      std::uint64_t /*seed*/, Stream /*stream*/) {
  no_cuda();
}

}  // namespace oomlab::kernels
