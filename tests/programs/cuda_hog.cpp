// A stand-in CUDA program for `exec`'s GPU tests: takes device memory in 64 MiB cudaMalloc
// pieces, touches it, holds it, frees it. Runs out of memory as a real program would: the CUDA
// runtime's own error text on stderr and exit 1.
//   oomlab_cuda_hog BYTES [HOLD_SECONDS]
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: oomlab_cuda_hog BYTES [HOLD_SECONDS]\n");
    return 2;
  }
  const unsigned long long want = std::strtoull(argv[1], nullptr, 10);
  const double hold = argc > 2 ? std::strtod(argv[2], nullptr) : 0.0;
  constexpr unsigned long long kPiece = 64ULL << 20;
  std::vector<void*> pieces;
  unsigned long long have = 0;
  while (have < want) {
    const unsigned long long bytes = want - have < kPiece ? want - have : kPiece;
    void* p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, bytes);
    if (rc != cudaSuccess) {
      std::fprintf(stderr, "CUDA error: %s (%s) after %llu bytes\n", cudaGetErrorString(rc),
                   cudaGetErrorName(rc), have);
      return 1;
    }
    cudaMemset(p, 0x5a, bytes);
    pieces.push_back(p);
    have += bytes;
  }
  cudaDeviceSynchronize();
  std::printf("holding %llu bytes (pid %d)\n", have, static_cast<int>(getpid()));
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::duration<double>(hold));
  for (void* p : pieces)
    cudaFree(p);
  return 0;
}
