// Recognising frameworks' GPU out-of-memory lines, from the messages they really print (each
// test says where its line comes from), and reading their figures exactly: a printed "178.04
// MiB" is 178.04 × 2^20 rounded, the byte count the framework's own format implies.
#include "exec/oom_message.hpp"

#include <gtest/gtest.h>

#include <string>

#include "exec/exec_outcome.hpp"
#include "exec/oom_text.hpp"

namespace oomlab {
namespace {

ProgramOom recognised(std::string_view line) {
  auto oom = recognise_oom_line(line);
  EXPECT_TRUE(oom.has_value()) << line;
  return oom.value_or(ProgramOom{});
}

// PyTorch 2.1's message (its "capacty" typo included) as a user posted it, every figure there.
TEST(OomMessage, PyTorchFiguresAreReadAndTheCacheDecidesTheCause) {
  const ProgramOom oom = recognised(
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.96 GiB. GPU 0 has a "
      "total capacty of 23.69 GiB of which 5.25 GiB is free. Process 2006998 has 256.00 MiB "
      "memory in use. Including non-PyTorch memory, this process has 18.17 GiB memory in use. Of "
      "the allocated memory 17.88 GiB is allocated by PyTorch, and 0 bytes is reserved by "
      "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
      "max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
      "PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ(oom.framework, "PyTorch");
  EXPECT_EQ(oom.request_bytes, 6399501271U);
  EXPECT_EQ(oom.device_total_bytes, 25436943811U);
  EXPECT_EQ(oom.device_free_bytes, 5637144576U);
  EXPECT_EQ(oom.process_used_bytes, 19509888942U);
  EXPECT_EQ(oom.framework_allocated_bytes, 19198503813U);
  EXPECT_EQ(oom.framework_cached_free_bytes, 0U);
  EXPECT_EQ(oom.richness(), 6);
  EXPECT_EQ(diagnose_program_oom(oom).cause, Cause::capacity);
}

// vLLM issue output (torch 2.x): another process holds the card, so there is no "this process".
TEST(OomMessage, PyTorchAnotherProcessIsNotThisProcess) {
  const ProgramOom oom = recognised(
      "(VllmWorker rank=1 pid=254) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
      "1.25 GiB. GPU 1 has a total capacity of 93.02 GiB of which 1.18 GiB is free. Process "
      "2752205 has 91.82 GiB memory in use. Of the allocated memory 90.63 GiB is allocated by "
      "PyTorch, and 120.54 MiB is reserved by PyTorch but unallocated. If reserved but "
      "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
      "to avoid fragmentation. See documentation for Memory Management");
  EXPECT_EQ(oom.request_bytes, 1342177280U);
  EXPECT_EQ(oom.device_total_bytes, 99879464468U);
  EXPECT_EQ(oom.device_free_bytes, 1267015352U);
  EXPECT_FALSE(oom.process_used_bytes.has_value());
  EXPECT_EQ(oom.framework_allocated_bytes, 97313221509U);
  EXPECT_EQ(oom.framework_cached_free_bytes, 126395351U);
}

// PyTorch 1.x (a comment in inha15/Camera_YOLOv5-HJ) and 1.0 (shllln/GenerativeGraph#5).
TEST(OomMessage, PyTorchOldFormatsGiveTheCacheAsReservedLessAllocated) {
  const ProgramOom one_x = recognised(
      "RuntimeError: CUDA out of memory. Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total "
      "capacity; 130.35 MiB already allocated; 47.06 MiB free; 188.00 MiB reserved in total by "
      "PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to "
      "avoid fragmentation.");
  EXPECT_EQ(one_x.request_bytes, 37748736U);
  EXPECT_EQ(one_x.device_total_bytes, 8514772664U);
  EXPECT_EQ(one_x.device_free_bytes, 49345987U);
  EXPECT_EQ(one_x.framework_allocated_bytes, 136681882U);
  EXPECT_EQ(one_x.framework_cached_free_bytes, 197132288U - 136681882U);
  const ProgramOom one_0 = recognised(
      "RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total "
      "capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)");
  EXPECT_EQ(one_0.request_bytes, 1048576U);
  EXPECT_EQ(one_0.device_free_bytes, 589824U);
  EXPECT_EQ(one_0.framework_allocated_bytes, 11703785882U);
  EXPECT_EQ(one_0.framework_cached_free_bytes, 32463913U);
}

// c10/cuda/CUDAMallocAsyncAllocator.cpp prints its figures on the lines after the first.
TEST(OomMessage, PyTorchAsyncBackendFiguresComeFromTheFollowingLines) {
  OomScanner scanner;
  for (const char* line :
       {"torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of "
        "memory)",
        "Currently allocated     : 1.00 GiB", "Requested               : 2.00 GiB",
        "Device limit            : 79.11 GiB", "Free (according to CUDA): 500.00 MiB",
        "PyTorch limit (set by user-supplied memory fraction)"}) {
    scanner.feed_line(line);
  }
  ASSERT_TRUE(scanner.found().has_value());
  const ProgramOom& oom = *scanner.found();
  EXPECT_EQ(oom.framework, "PyTorch");
  EXPECT_EQ(oom.framework_allocated_bytes, 1073741824U);
  EXPECT_EQ(oom.request_bytes, 2147483648U);
  EXPECT_EQ(oom.device_total_bytes, 84943715697U);
  EXPECT_EQ(oom.device_free_bytes, 524288000U);
  EXPECT_EQ(scanner.lines_seen(), 1U);
}

// c10's CUDA_CHECK (TencentARC/GFPGAN#274) and cuBLAS failing its handle inside PyTorch.
TEST(OomMessage, CudaCallsFailingInsidePyTorchAndTheLibraries) {
  EXPECT_EQ(recognised("RuntimeError: CUDA error: out of memory").framework, "PyTorch");
  EXPECT_EQ(recognised("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling "
                       "`cublasCreate(handle)`")
                .framework,
            "cuBLAS");
  // A TensorFlow 1.x log line (a user's log in a public repository).
  EXPECT_EQ(
      recognised("2018-02-07 22:06:11.979617: E tensorflow/stream_executor/cuda/"
                 "cuda_blas.cc:366] failed to create cublas handle: CUBLAS_STATUS_ALLOC_FAILED")
          .framework,
      "cuBLAS");
  EXPECT_EQ(recognised("RuntimeError: cuDNN error: CUDNN_STATUS_ALLOC_FAILED").framework, "cuDNN");
}

// TF 2.10's op_kernel.cc warning as a user logged it: 500·512·4·4 floats.
TEST(OomMessage, TensorFlowTensorShapeGivesTheRequest) {
  const ProgramOom oom = recognised(
      "2022-11-09 16:53:58.305871: W tensorflow/core/framework/op_kernel.cc:1780] OP_REQUIRES "
      "failed at conv_grad_input_ops.cc:327 : RESOURCE_EXHAUSTED: OOM when allocating tensor "
      "with shape[500,512,4,4] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
      "allocator GPU_0_bfc");
  EXPECT_EQ(oom.framework, "TensorFlow");
  EXPECT_EQ(oom.request_bytes, 500U * 512 * 4 * 4 * 4);
  EXPECT_TRUE(oom.sizing_setting.empty());
}

// The BFC allocator, logged from TF's tree and from jaxlib's (users' logs); its own hint on the
// next line and its "not a failure" warning are not OOMs.
TEST(OomMessage, BfcAllocatorLinesTellTensorFlowFromXlaByTheirPath) {
  const ProgramOom tf = recognised(
      "2024-07-13 01:58:23.985593: W tensorflow/tsl/framework/bfc_allocator.cc:485] Allocator "
      "(GPU_0_bfc) ran out of memory trying to allocate 3.07GiB (rounded to 3300000000)requested "
      "by op _EagerConst");
  EXPECT_EQ(tf.framework, "TensorFlow");
  EXPECT_EQ(tf.request_bytes, 3300000000U);
  const ProgramOom xla = recognised(
      "2025-01-05 09:48:28.754214: W external/xla/xla/tsl/framework/bfc_allocator.cc:501] "
      "Allocator (GPU_0_bfc) ran out of memory trying to allocate 3.72GiB (rounded to "
      "4000000000)requested by op ");
  EXPECT_EQ(xla.framework, "JAX/XLA");
  EXPECT_EQ(xla.request_bytes, 4000000000U);
  EXPECT_FALSE(
      recognise_oom_line("If the cause is memory fragmentation maybe the environment variable "
                         "'TF_GPU_ALLOCATOR=cuda_malloc_async' will improve the situation. "));
  EXPECT_FALSE(recognise_oom_line(
      "2020-04-29 16:25:36.594950: W tensorflow/core/common_runtime/bfc_allocator.cc:243] "
      "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.25GiB with "
      "freed_by_count=0. The caller indicates that this is not a failure, but may mean that "
      "there could be performance gains if more memory were available."));
}

// StreamExecutor's cuMemAlloc failure (a TF 2.5 user log; philip-huang/PIXOR#31's title): the
// BFC allocator backs off and retries, so it may not be the failure yet.
TEST(OomMessage, StreamExecutorDriverFailureIsReadButMayBeRetried) {
  const ProgramOom tf = recognised(
      "2021-07-14 08:08:53.663124: I tensorflow/stream_executor/cuda/cuda_driver.cc:775] failed "
      "to allocate 256.00M (268435456 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of "
      "memory");
  EXPECT_EQ(tf.framework, "TensorFlow");
  EXPECT_EQ(tf.request_bytes, 268435456U);
  EXPECT_TRUE(tf.may_be_retried);
  const ProgramOom bare = recognised(
      "failed to allocate 17.79G (19104890880 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out "
      "of memory");
  EXPECT_EQ(bare.framework, "TensorFlow/XLA");
  EXPECT_EQ(bare.request_bytes, 19104890880U);
}

// The BFC allocator's bare line is TensorFlow's or XLA's alike: the program's command line and
// output name which, through the dialect's reporter_named_by; both named, or neither, it stays
// shared.
TEST(OomMessages, TheSharedBfcLineIsNamedForTheOneFrameworkTheProgramShows) {
  const ProgramOom bare = recognised(
      "failed to allocate 17.79G (19104890880 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out "
      "of memory");
  const auto named = [&](std::initializer_list<std::string_view> lines) {
    FrameworkHints hints;
    for (const std::string_view line : lines)
      hints.read(line);
    ProgramOom oom = bare;
    name_shared_reporter(oom, hints);
    return oom.framework;
  };
  EXPECT_EQ(named({"python train_jax.py", "step 1"}), "JAX/XLA");
  EXPECT_EQ(named({"python train.py", "import tensorflow as tf"}), "TensorFlow");
  EXPECT_EQ(named({"python train.py"}), "TensorFlow/XLA");
  EXPECT_EQ(named({"jax and tensorflow both"}), "TensorFlow/XLA");
  ProgramOom torch_line = bare;
  torch_line.framework = "PyTorch";
  FrameworkHints jax;
  jax.read("jax");
  name_shared_reporter(torch_line, jax);
  EXPECT_EQ(torch_line.framework, "PyTorch") << "another reporter is never renamed";
}

// jax-ml/jax#788 (jaxlib 0.1.x, built from TF's tree) and patrick-kidger/equinox#737.
TEST(OomMessage, XlaResourceExhaustedGivesTheRequest) {
  const ProgramOom old = recognised(
      "[1] 2019-06-13 01:17:08.886805: E external/org_tensorflow/tensorflow/compiler/xla/python/"
      "local_client.cc:672] Execution of replica 0 failed: Resource exhausted: Out of memory "
      "while trying to allocate 5520758552 bytes.");
  EXPECT_EQ(old.framework, "JAX/XLA");
  EXPECT_EQ(old.request_bytes, 5520758552U);
  const ProgramOom pjrt = recognised(
      "XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 6.27GiB (6727663616B) "
      "on device ordinal 0");
  EXPECT_EQ(pjrt.framework, "JAX/XLA");
  EXPECT_EQ(pjrt.request_bytes, 6727663616U);
  EXPECT_FALSE(pjrt.may_be_retried);
}

// jax/_src/xla_bridge.py's warning when the CUDA backend cannot start, in its own words.
TEST(OomMessage, JaxPreallocationFailureCarriesTheSizingSetting) {
  const ProgramOom oom = recognised(
      "WARNING:jax._src.xla_bridge:CUDA backend failed to initialize: INTERNAL: no supported "
      "devices found for platform CUDA..This may be due to JAX pre-allocating too much device "
      "memory, leaving too little for CUDA library initialization. See "
      "https://docs.jax.dev/en/latest/gpu_memory_allocation.html for more details and potential "
      "workarounds.(Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)");
  EXPECT_EQ(oom.framework, "JAX/XLA");
  EXPECT_NE(oom.sizing_setting.find("XLA_PYTHON_CLIENT_PREALLOCATE=false"), std::string::npos);
  const ProgramOomDiagnosis d = diagnose_program_oom(oom);
  EXPECT_EQ(d.cause, Cause::capacity);
  EXPECT_NE(d.advice.find("XLA_PYTHON_CLIENT_PREALLOCATE=false"), std::string::npos);
}

// The CUDA APIs' own names: cuda-samples' checkCudaErrors, the gpuErrchk macro, numba's driver.
TEST(OomMessage, CudaRuntimeAndDriverNamesAreRecognised) {
  EXPECT_EQ(recognised("CUDA error at vectorAdd.cu:42 code=2(cudaErrorMemoryAllocation) "
                       "\"cudaMalloc(&d_A, size)\"")
                .framework,
            "CUDA runtime");
  EXPECT_EQ(recognised("GPUassert: out of memory kernel.cu 57").framework, "CUDA runtime");
  EXPECT_EQ(recognised("numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results "
                       "in CUDA_ERROR_OUT_OF_MEMORY")
                .framework,
            "CUDA driver");
}

// cupy/cuda/memory.pyx's OutOfMemoryError and cupy_backends' CUDARuntimeError, as printed.
TEST(OomMessage, CuPyCommasAreReadAsThousands) {
  const ProgramOom oom = recognised(
      "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes "
      "(allocated so far: 2,147,483,648 bytes).");
  EXPECT_EQ(oom.framework, "CuPy");
  EXPECT_EQ(oom.request_bytes, 1073741824U);
  EXPECT_EQ(oom.framework_allocated_bytes, 2147483648U);
  EXPECT_EQ(recognised("cupy_backends.cuda.api.runtime.CUDARuntimeError: "
                       "cudaErrorMemoryAllocation: out of memory")
                .framework,
            "CuPy");
}

// CUDA.jl's OutOfGPUMemoryError in a user's notebook: figures on the lines that follow.
TEST(OomMessage, CudaJlUsageLinesAddTheDeviceAndPoolFigures) {
  OomScanner scanner;
  for (const char* line :
       {"Out of GPU memory trying to allocate 15.263 GiB",
        "Effective GPU memory usage: 11.12% (1.311 GiB/11.784 GiB)",
        "CUDA allocator usage: 980.317 MiB",
        "Memory pool usage: 980.317 MiB (980.317 MiB allocated, 0 bytes cached)", "Stacktrace:"}) {
    scanner.feed_line(line);
  }
  ASSERT_TRUE(scanner.found().has_value());
  const ProgramOom& oom = *scanner.found();
  EXPECT_EQ(oom.framework, "CUDA.jl");
  EXPECT_EQ(oom.request_bytes, 16388521460U);
  EXPECT_EQ(oom.device_total_bytes, 12652973654U);
  EXPECT_EQ(oom.device_free_bytes, 12652973654U - 1407675531U);
  EXPECT_EQ(oom.framework_allocated_bytes, 1027936879U);
  EXPECT_EQ(oom.framework_cached_free_bytes, 0U);
  // An older CUDA.jl's one-line form (a user's script comment): "(N reserved)".
  const ProgramOom old = recognised(
      "ERROR: LoadError: Out of GPU memory trying to allocate 11.921 GiB Effective GPU memory "
      "usage: 99.85% (15.758 GiB/15.782 GiB) Memory pool usage: 13.411 GiB (15.281 GiB reserved)");
  EXPECT_EQ(old.framework_cached_free_bytes, 16407848813U - 14399951602U);
  EXPECT_EQ(diagnose_program_oom(old).cause, Cause::capacity);
}

// rmm/detail/error.hpp's out_of_memory, from a cuDF user's notebook and older RMM's shape.
TEST(OomMessage, RmmOutOfMemoryIsNotAHostMemoryError) {
  const ProgramOom oom = recognised(
      "MemoryError: std::bad_alloc: out_of_memory: CUDA error (failed to allocate 33295450768 "
      "bytes) at: /pyenv/versions/3.12.9/lib/python3.12/site-packages/librmm/include/rmm/mr/"
      "device/cuda_memory_resource.hpp:62: cudaErrorMemoryAllocation out of memory");
  EXPECT_EQ(oom.framework, "RMM");
  EXPECT_EQ(oom.request_bytes, 33295450768U);
  EXPECT_EQ(recognised("std::bad_alloc: out_of_memory: RMM failure at:/opt/rmm/include/rmm/mr/"
                       "device/pool_memory_resource.hpp:196: Maximum pool size exceeded")
                .framework,
            "RMM");
}

TEST(OomMessage, HelpTextsHostOomsAndOtherErrorsAreNotGpuOoms) {
  for (const char* line : {
           "",
           "   ",
           "If reserved but unallocated memory is large try setting "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
           "to avoid out of memory errors, set XLA_PYTHON_CLIENT_MEM_FRACTION=.5",
           "Hint: If you want to see a list of allocated tensors when OOM happens, add "
           "report_tensor_allocations_upon_oom to RunOptions for current allocation info.",
           "XLA backend allocating 63700000000 bytes on device 0 for BFCAllocator.",
           "MemoryError",
           "MemoryError: Unable to allocate 7.45 GiB for an array with shape (1000000000,) and "
           "data type float64",
           "terminate called after throwing an instance of 'std::bad_alloc'",
           "  what():  std::bad_alloc",
           "Killed",
           "Memory cgroup out of memory: Killed process 42 (python) total-vm:8kB",
           "Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED",
           "E tensorflow/stream_executor/cuda/cuda_dnn.cc:348] could not create cudnn handle: "
           "CUDNN_STATUS_INTERNAL_ERROR",
           "epoch 3: train loss 0.41, GPU memory 71.2 GiB",
       }) {
    EXPECT_FALSE(recognise_oom_line(line).has_value()) << line;
  }
}

TEST(OomMessage, AnyBytesAreSafeAndTheKeptLineIsShortValidText) {
  std::string garbage(1 << 20, '\0');
  for (std::size_t i = 0; i < garbage.size(); ++i) {
    garbage[i] = static_cast<char>((i * 2654435761U) >> 13);
  }
  EXPECT_FALSE(recognise_oom_line(garbage).has_value());
  std::string digits(1 << 20, '9');
  EXPECT_FALSE(recognise_oom_line("Tried to allocate " + digits).has_value());
  const auto huge = recognise_oom_line("RuntimeError: CUDA out of memory. Tried to allocate " +
                                       digits + " GiB\xff\xfe " + std::string(500, 'x'));
  ASSERT_TRUE(huge.has_value());
  EXPECT_FALSE(huge->request_bytes.has_value());  // too large for 64 bits: no figure, no wrap
  EXPECT_LE(huge->line.size(), 400U + 3U);
  EXPECT_TRUE(huge->line.ends_with("…"));
  const auto invalid = recognise_oom_line("CUDA error: out of memory \xc3\x28 \xe2\x82\xac\r");
  ASSERT_TRUE(invalid.has_value());
  EXPECT_EQ(invalid->line, "CUDA error: out of memory ?( \xe2\x82\xac");
}

TEST(OomMessage, SizesAreReadInTheFrameworksBinaryUnits) {
  EXPECT_EQ(oom_text::read_size("178.04 MiB", 0)->bytes, 186688471U);
  EXPECT_EQ(oom_text::read_size("1,024 bytes", 0)->bytes, 1024U);
  EXPECT_EQ(oom_text::read_size("1.50 KiB", 0)->bytes, 1536U);
  EXPECT_EQ(oom_text::read_size("60.6GiB", 0)->bytes, 65068754534U);
  EXPECT_EQ(oom_text::size_after("trying to allocate 60.6GiB (65046000000 bytes)", "allocate "),
            65046000000U);
  EXPECT_EQ(oom_text::two_decimal_size(186688471), "178.04 MiB");
  EXPECT_EQ(oom_text::two_decimal_size(512), "512 bytes");
  EXPECT_FALSE(oom_text::read_size("GiB", 0).has_value());
}

}  // namespace
}  // namespace oomlab
