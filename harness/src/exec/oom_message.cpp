// Each recogniser below names, in one line, where its message shape comes from. The shapes are
// matched on the words the framework itself prints around the figures, never on "memory" alone,
// so that help texts and host OOMs ("MemoryError", "std::bad_alloc", "Killed") do not count.
#include "exec/oom_message.hpp"

#include <algorithm>
#include <array>

#include "exec/oom_text.hpp"

namespace oomlab {
namespace {

using oom_text::contains;
using oom_text::size_after;
using oom_text::size_before;

constexpr std::size_t kReadBytes =
    std::size_t{64} * 1024;  // a longer line is read in its first 64 KiB
constexpr std::size_t kKeptBytes = 400;

ProgramOom oom_of(std::string_view framework) {
  ProgramOom oom;
  oom.framework = framework;
  return oom;
}

std::optional<std::uint64_t> difference(std::optional<std::uint64_t> whole,
                                        std::optional<std::uint64_t> part) {
  if (!whole || !part || *part > *whole) return std::nullopt;
  return *whole - *part;
}

// TF and XLA share the BFC allocator and StreamExecutor; the logged source path tells them
// apart. TF builds XLA as external/local_xla, jaxlib as external/xla (once
// external/org_tensorflow).
std::string_view tf_or_xla(std::string_view line) {
  if (contains(line, "local_xla/") || contains(line, "local_tsl/")) return "TensorFlow";
  if (contains(line, "external/xla/") || contains(line, "external/org_tensorflow/")) {
    return "JAX/XLA";
  }
  if (contains(line, "tensorflow/")) return "TensorFlow";
  return contains(line, "xla/") ? "JAX/XLA" : "TensorFlow/XLA";
}

// c10/cuda/CUDACachingAllocator.cpp (2.x): "CUDA out of memory. Tried to allocate 20.00 MiB.
// GPU 0 has a total capacity of ... of which ... is free. ... this process has ... memory in
// use. Of the allocated memory ... is allocated by PyTorch, and ... is reserved by PyTorch but
// unallocated."; 1.x: "(GPU 0; 7.93 GiB total capacity; 130.35 MiB already allocated; 47.06 MiB
// free; 188.00 MiB reserved in total by PyTorch)"; 1.0-1.3: "...; 30.96 MiB cached)".
std::optional<ProgramOom> pytorch_caching(std::string_view line) {
  const bool tried = contains(line, " out of memory. Tried to allocate ");
  const bool raised = contains(line, "Error: CUDA out of memory.") ||
                      line.starts_with("CUDA out of memory.") ||
                      contains(line, "cuda runtime error (2) : out of memory");  // 0.4's THC
  if (!tried && !raised) return std::nullopt;
  ProgramOom oom = oom_of("PyTorch");
  oom.request_bytes = size_after(line, "Tried to allocate ");
  oom.device_total_bytes = size_after(line, "total capacity of ");
  if (!oom.device_total_bytes) oom.device_total_bytes = size_after(line, "total capacty of ");
  if (!oom.device_total_bytes) oom.device_total_bytes = size_before(line, " total capacity;");
  oom.device_free_bytes = size_after(line, " of which ");
  if (!oom.device_free_bytes) oom.device_free_bytes = size_before(line, " free;");
  oom.process_used_bytes = size_after(line, "this process has ");
  oom.framework_allocated_bytes = size_after(line, "Of the allocated memory ");
  if (!oom.framework_allocated_bytes) {
    oom.framework_allocated_bytes = size_before(line, " already allocated");
  }
  oom.framework_cached_free_bytes = size_before(line, " is reserved by PyTorch but unallocated");
  if (!oom.framework_cached_free_bytes) {
    oom.framework_cached_free_bytes = difference(size_before(line, " reserved in total by PyTorch"),
                                                 oom.framework_allocated_bytes);
  }
  if (!oom.framework_cached_free_bytes) {
    oom.framework_cached_free_bytes = size_before(line, " cached)");
  }
  return oom;
}

// c10/cuda/CUDAMallocAsyncAllocator.cpp: "Allocation on device 0 would exceed allowed memory.
// (out of memory)", its figures on the lines that follow. c10/cuda/CUDAException.cpp: a CUDA
// call failing inside PyTorch, "CUDA error: out of memory".
std::optional<ProgramOom> pytorch_other(std::string_view line) {
  if (contains(line, " would exceed allowed memory. (out of memory)")) {
    ProgramOom oom = oom_of("PyTorch");
    read_follow_up_figures(oom, line);
    return oom;
  }
  // c10's CUDA_CHECK prints cudaGetErrorString's words alone; a line that also names the error
  // (cudaErrorMemoryAllocation) is a program's own check of the runtime (measured: a CUDA
  // program's "CUDA error: out of memory (cudaErrorMemoryAllocation)" was called PyTorch).
  if (contains(line, "CUDA error: out of memory") && !contains(line, "cudaError"))
    return oom_of("PyTorch");
  return std::nullopt;
}

// The CUDA libraries' status names (cublas_api.h, cudnn.h, cufft.h, cusparse.h,
// cusolver_common.h): allocation failures only; cuDNN's NOT_INITIALIZED is not one. NCCL's
// CUDACHECK (src/include/checks.h) logs "Cuda failure 'out of memory'" (2.x: "Cuda failure 2
// 'out of memory'"), and its allocators "Failed to CUDA calloc".
std::optional<ProgramOom> cuda_library(std::string_view line) {
  if (contains(line, "Cuda failure 'out of memory'") ||
      contains(line, "Cuda failure 2 'out of memory'") ||
      (contains(line, "NCCL") && contains(line, "Failed to CUDA calloc")))
    return oom_of("NCCL");
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kStatuses{
      {{"CUBLAS_STATUS_ALLOC_FAILED", "cuBLAS"},
       {"CUDNN_STATUS_ALLOC_FAILED", "cuDNN"},
       {"CUFFT_ALLOC_FAILED", "cuFFT"},
       {"CUSPARSE_STATUS_ALLOC_FAILED", "cuSPARSE"},
       {"CUSOLVER_STATUS_ALLOC_FAILED", "cuSOLVER"}}};
  for (const auto& [status, library] : kStatuses) {
    if (contains(line, status)) return oom_of(library);
  }
  return std::nullopt;
}

// cupy/cuda/memory.pyx, OutOfMemoryError: "Out of memory allocating 1,073,741,824 bytes
// (allocated so far: 0 bytes)."; cupy_backends/cuda/api/runtime.pyx, CUDARuntimeError.
std::optional<ProgramOom> cupy(std::string_view line) {
  if (contains(line, "Out of memory allocating ") && contains(line, " bytes")) {
    ProgramOom oom = oom_of("CuPy");
    oom.request_bytes = size_after(line, "Out of memory allocating ");
    oom.framework_allocated_bytes = size_after(line, "allocated so far: ");
    return oom;
  }
  if (contains(line, "CUDARuntimeError: cudaErrorMemoryAllocation")) return oom_of("CuPy");
  return std::nullopt;
}

// rmm/detail/error.hpp, RMM_CUDA_TRY_ALLOC: "std::bad_alloc: out_of_memory: CUDA error (failed
// to allocate 2778950720 bytes) at: ...", older "out_of_memory: CUDA error at: ...";
// rmm/mr/device/pool_memory_resource.hpp: "Maximum pool size exceeded".
std::optional<ProgramOom> rmm(std::string_view line) {
  const bool cuda = contains(line, "out_of_memory: CUDA error");
  const bool pool =
      contains(line, "out_of_memory: RMM failure") || contains(line, "Maximum pool size exceeded");
  if (!cuda && !pool && !contains(line, "rmm::out_of_memory")) return std::nullopt;
  ProgramOom oom = oom_of("RMM");
  oom.request_bytes = size_after(line, "(failed to allocate ");
  return oom;
}

// tensorflow/core/framework/op_kernel.cc & allocator: "OOM when allocating tensor with
// shape[8,64,512,512] and type float on /job:localhost/...";
// tsl/framework/bfc_allocator.cc: "Allocator (GPU_0_bfc) ran out of memory trying to allocate
// 1.00GiB (rounded to 1073741824)requested by op MatMul"; stream_executor/cuda/cuda_driver.cc:
// "failed to allocate 17.79G (19104890880 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY".
std::optional<ProgramOom> tensorflow_or_xla_allocator(std::string_view line) {
  if (contains(line, "OOM when allocating tensor")) {
    ProgramOom oom = oom_of("TensorFlow");
    oom.request_bytes = oom_text::tensor_bytes(line);
    return oom;
  }
  // A warning logged before the caller raises (or copes): the raise that follows is the
  // failure itself (measured: JAX 0.8 on an H100 logs it, then raises JaxRuntimeError).
  if (contains(line, "Allocator (") && contains(line, "ran out of memory trying to allocate ")) {
    ProgramOom oom = oom_of(tf_or_xla(line));
    oom.request_bytes = size_after(line, "(rounded to ");
    if (!oom.request_bytes) oom.request_bytes = size_after(line, "trying to allocate ");
    oom.may_be_retried = true;
    return oom;
  }
  // xla/stream_executor/cuda/cuda_executor.cc, as logged on an H100 when the BFC allocator's
  // preallocation is refused: "Failed to allocate device memory of 59.38GiB (63763906560
  // bytes): RESOURCE_EXHAUSTED: : CUDA_ERROR_OUT_OF_MEMORY: out of memory"; it then asks less.
  if (contains(line, "Failed to allocate device memory of ")) {
    ProgramOom oom = oom_of(tf_or_xla(line));
    oom.request_bytes = size_after(line, "device memory of ");
    oom.may_be_retried = true;
    return oom;
  }
  if (contains(line, "failed to allocate ") &&
      contains(line, "from device: CUDA_ERROR_OUT_OF_MEMORY")) {
    ProgramOom oom = oom_of(tf_or_xla(line));
    oom.request_bytes = size_after(line, "failed to allocate ");
    oom.may_be_retried = true;
    return oom;
  }
  return std::nullopt;
}

// xla/service/shaped_buffer / pjrt: "RESOURCE_EXHAUSTED: Out of memory while trying to allocate
// 1073741824 bytes." and "RESOURCE_EXHAUSTED: Failed to allocate request for 6.27GiB
// (6727663616B) on device ordinal 0"; jax/_src/xla_bridge.py: "CUDA backend failed to
// initialize: ... This may be due to JAX pre-allocating too much device memory".
std::optional<ProgramOom> jax_xla(std::string_view line) {
  if (contains(line, "CUDA backend failed to initialize") && contains(line, "pre-allocat")) {
    ProgramOom oom = oom_of("JAX/XLA");
    oom.sizing_setting =
        "XLA_PYTHON_CLIENT_PREALLOCATE=false (or XLA_PYTHON_CLIENT_MEM_FRACTION=...)";
    return oom;
  }
  const bool exhausted =
      contains(line, "RESOURCE_EXHAUSTED") || contains(line, "Resource exhausted: ");
  if (!exhausted) return std::nullopt;
  ProgramOom oom = oom_of("JAX/XLA");
  oom.request_bytes = size_after(line, "Out of memory while trying to allocate ");
  if (!oom.request_bytes) oom.request_bytes = size_after(line, "Failed to allocate request for ");
  if (!oom.request_bytes && !contains(line, "memory")) return std::nullopt;
  return oom;
}

// CUDA.jl src/pool.jl, OutOfGPUMemoryError: "Out of GPU memory trying to allocate 1.000 GiB",
// its usage on the following lines; lib/cudadrv/error.jl, CuError: "CUDA error: out of memory
// (code 2, ERROR_OUT_OF_MEMORY)".
std::optional<ProgramOom> cuda_jl(std::string_view line) {
  if (contains(line, "Out of GPU memory trying to allocate ")) {
    ProgramOom oom = oom_of("CUDA.jl");
    oom.request_bytes = size_after(line, "Out of GPU memory trying to allocate ");
    read_follow_up_figures(oom, line);
    return oom;
  }
  if (contains(line, "(code 2, ERROR_OUT_OF_MEMORY)")) return oom_of("CUDA.jl");
  return std::nullopt;
}

// cuda.h's CUresult name, cuda_runtime_api.h's cudaError_t name; "GPUassert: out of memory" is
// the widely copied gpuErrchk macro printing cudaGetErrorString.
std::optional<ProgramOom> cuda_itself(std::string_view line) {
  if (contains(line, "CUDA_ERROR_OUT_OF_MEMORY")) return oom_of("CUDA driver");
  if (contains(line, "cudaErrorMemoryAllocation") || contains(line, "GPUassert: out of memory")) {
    return oom_of("CUDA runtime");
  }
  return std::nullopt;
}

std::string_view trimmed(std::string_view line) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const std::size_t first = line.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return line.substr(first, line.find_last_not_of(kSpace) - first + 1);
}

// The length of the valid UTF-8 sequence at `at`, or 0 (RFC 3629: no overlongs, no surrogates).
std::size_t utf8_length(std::string_view s, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || at + length > s.size()) return 0;
  const unsigned char second = byte(at + 1);
  const unsigned char low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  const unsigned char high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  if (second < low || second > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

// The line as it may be shown and written to JSON: control characters as spaces, invalid
// UTF-8 as '?', cut at a character boundary to 400 bytes with "…".
std::string shown(std::string_view line) {
  std::string out;
  out.reserve(std::min(line.size(), kKeptBytes) + 3);
  for (std::size_t at = 0; at < line.size();) {
    const std::size_t length = utf8_length(line, at);
    if (out.size() + std::max<std::size_t>(length, 1) > kKeptBytes) {
      out += "…";
      break;
    }
    const auto c = static_cast<unsigned char>(line[at]);
    if (length == 0) {
      out += '?';
    } else if (c < 0x20 || c == 0x7F) {
      out += ' ';
    } else {
      out.append(line.substr(at, length));
    }
    at += std::max<std::size_t>(length, 1);
  }
  return out;
}

}  // namespace

int ProgramOom::richness() const {
  return static_cast<int>(request_bytes.has_value()) +
         static_cast<int>(device_total_bytes.has_value()) +
         static_cast<int>(device_free_bytes.has_value()) +
         static_cast<int>(process_used_bytes.has_value()) +
         static_cast<int>(framework_allocated_bytes.has_value()) +
         static_cast<int>(framework_cached_free_bytes.has_value());
}

std::optional<ProgramOom> recognise_oom_line(std::string_view line) {
  const std::string_view text = trimmed(line.substr(0, std::min(line.size(), kReadBytes)));
  // TF's BFC allocator warning that the caller will cope (bfc_allocator.cc): not a failure.
  if (text.empty() || contains(text, "The caller indicates that this is not a failure")) {
    return std::nullopt;
  }
  using Recogniser = std::optional<ProgramOom> (*)(std::string_view);
  static constexpr std::array<Recogniser, 9> kRecognisers{
      pytorch_caching, cuda_library,  rmm,     cupy,       tensorflow_or_xla_allocator,
      cuda_jl,         pytorch_other, jax_xla, cuda_itself};
  for (const Recogniser recognise : kRecognisers) {
    if (auto oom = recognise(text)) {
      oom->line = shown(text);
      return oom;
    }
  }
  return std::nullopt;
}

}  // namespace oomlab
