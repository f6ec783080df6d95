#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "device/cuda_check.hpp"
#include "kernels/kernels.hpp"

namespace oomlab::kernels {

namespace {

constexpr int kThreads = 256;
constexpr std::size_t kMaxBlocks = 4096;

__host__ __device__ inline std::uint64_t pattern(std::uint64_t seed, std::uint64_t address) {
  std::uint64_t z = seed ^ (address * 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30U)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27U)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31U);
}

__global__ void touch_kernel(char* base, std::size_t pages, std::size_t stride) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < pages;
       i += std::size_t{gridDim.x} * blockDim.x) {
    base[i * stride] = 1;
  }
}

__global__ void fill_kernel(std::uint64_t* words, std::size_t count, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    words[i] = pattern(seed, reinterpret_cast<std::uint64_t>(words + i));
  }
}

__global__ void verify_kernel(const std::uint64_t* words, std::size_t count, std::uint64_t seed,
                              unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    local += words[i] != pattern(seed, reinterpret_cast<std::uint64_t>(words + i)) ? 1 : 0;
  }
  if (local != 0) atomicAdd(mismatches, local);
}

template <typename Target>
__global__ void cast_kernel(const float* source, Target* target, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    target[i] = Target(source[i]);
  }
}

unsigned grid_for(std::size_t items) {
  const std::size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, kMaxBlocks));
}

cudaStream_t cuda_stream(Stream s) {
  return static_cast<cudaStream_t>(s.handle);
}

}  // namespace

void preload() {
  cudaFuncAttributes attributes{};
  OOMLAB_CUDA_TRY(cudaFuncGetAttributes(&attributes, touch_kernel));
  OOMLAB_CUDA_TRY(cudaFuncGetAttributes(&attributes, fill_kernel));
  OOMLAB_CUDA_TRY(cudaFuncGetAttributes(&attributes, verify_kernel));
  OOMLAB_CUDA_TRY(cudaFuncGetAttributes(&attributes, cast_kernel<__half>));
  OOMLAB_CUDA_TRY(cudaFuncGetAttributes(&attributes, cast_kernel<__nv_bfloat16>));
  OOMLAB_CUDA_TRY(cudaFuncGetAttributes(&attributes, cast_kernel<__nv_fp8_e4m3>));
  OOMLAB_CUDA_TRY(cudaFuncGetAttributes(&attributes, cast_kernel<float>));
}

void cast(const float* source, void* target, std::size_t count, Precision precision,
          Stream stream) {
  if (source == nullptr || target == nullptr || count == 0) return;
  const cudaStream_t s = cuda_stream(stream);
  const unsigned grid = grid_for(count);
  switch (precision) {
    case Precision::fp32:
      cast_kernel<<<grid, kThreads, 0, s>>>(source, static_cast<float*>(target), count);
      break;
    case Precision::fp16:
      cast_kernel<<<grid, kThreads, 0, s>>>(source, static_cast<__half*>(target), count);
      break;
    case Precision::bf16:
      cast_kernel<<<grid, kThreads, 0, s>>>(source, static_cast<__nv_bfloat16*>(target), count);
      break;
    case Precision::fp8_e4m3:
      cast_kernel<<<grid, kThreads, 0, s>>>(source, static_cast<__nv_fp8_e4m3*>(target), count);
      break;
  }
  OOMLAB_CUDA_TRY(cudaGetLastError());
}

void wait(Stream stream) {
  OOMLAB_CUDA_TRY(cudaStreamSynchronize(cuda_stream(stream)));
}

void touch(void* ptr, std::size_t bytes, Stream stream) {
  if (ptr == nullptr || bytes == 0) return;
  const std::size_t pages = (bytes + kTouchStride - 1) / kTouchStride;
  touch_kernel<<<grid_for(pages), kThreads, 0, cuda_stream(stream)>>>(static_cast<char*>(ptr),
                                                                      pages, kTouchStride);
  OOMLAB_CUDA_TRY(cudaGetLastError());
}

void fill(void* ptr, std::size_t bytes, std::uint64_t seed, Stream stream) {
  const std::size_t words = bytes / sizeof(std::uint64_t);
  if (ptr == nullptr || words == 0) return;
  fill_kernel<<<grid_for(words), kThreads, 0, cuda_stream(stream)>>>(
      static_cast<std::uint64_t*>(ptr), words, seed);
  OOMLAB_CUDA_TRY(cudaGetLastError());
}

MismatchCounter::MismatchCounter() {
  OOMLAB_CUDA_TRY(cudaMalloc(&device_count_, sizeof(std::uint64_t)));
}

MismatchCounter::~MismatchCounter() {
  (void)cudaFree(device_count_);
}

std::uint64_t MismatchCounter::verify(const void* ptr, std::size_t bytes, std::uint64_t seed,
                                      Stream stream) {
  const std::size_t words = bytes / sizeof(std::uint64_t);
  if (ptr == nullptr || words == 0) return 0;
  const cudaStream_t s = cuda_stream(stream);
  OOMLAB_CUDA_TRY(cudaMemsetAsync(device_count_, 0, sizeof(std::uint64_t), s));
  verify_kernel<<<grid_for(words), kThreads, 0, s>>>(
      static_cast<const std::uint64_t*>(ptr), words, seed,
      reinterpret_cast<unsigned long long*>(device_count_));
  OOMLAB_CUDA_TRY(cudaGetLastError());
  std::uint64_t count = 0;
  OOMLAB_CUDA_TRY(cudaMemcpyAsync(&count, device_count_, sizeof(count), cudaMemcpyDeviceToHost, s));
  OOMLAB_CUDA_TRY(cudaStreamSynchronize(s));
  return count;
}

}  // namespace oomlab::kernels
