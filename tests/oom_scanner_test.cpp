// Which OOM line of a whole run is kept, and what the kept line's figures say about the cause.
#include <gtest/gtest.h>

#include "exec/oom_message.hpp"
#include "oomlab/units.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

// One PyTorch traceback prints the short RuntimeError text and then the full exception.
TEST(OomMessageScanner, ARicherLaterLineReplacesTheFirst) {
  OomScanner scanner;
  scanner.feed_line("Traceback (most recent call last):");
  scanner.feed_line("RuntimeError: CUDA error: out of memory");
  scanner.feed_line("  File \"train.py\", line 12, in <module>");
  scanner.feed_line(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 256.00 MiB. GPU 0 has a "
      "total capacity of 79.11 GiB of which 3.06 MiB is free. Including non-PyTorch memory, this "
      "process has 79.10 GiB memory in use. Of the allocated memory 78.73 GiB is allocated by "
      "PyTorch, and 178.04 MiB is reserved by PyTorch but unallocated.");
  ASSERT_TRUE(scanner.found().has_value());
  EXPECT_EQ(scanner.found()->richness(), 6);
  EXPECT_EQ(scanner.found()->request_bytes, 256_MiB);
  EXPECT_EQ(scanner.lines_seen(), 2U);
}

TEST(OomMessageScanner, EqualRichnessKeepsTheFirstAndEveryOomLineIsCounted) {
  OomScanner scanner;
  scanner.feed_line("RuntimeError: CUDA error: out of memory");
  scanner.feed_line("cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorMemoryAllocation");
  scanner.feed_line("loss 0.25");
  scanner.feed_line("CUDA error at a.cu:3 code=2(cudaErrorMemoryAllocation) \"cudaMalloc\"");
  ASSERT_TRUE(scanner.found().has_value());
  EXPECT_EQ(scanner.found()->framework, "PyTorch");
  EXPECT_EQ(scanner.lines_seen(), 3U);
  EXPECT_TRUE(scanner.sizing_setting().empty());
}

// XLA logs the refused driver allocation (which its allocator may retry) before the failure.
TEST(OomMessageScanner, ACertainFailureReplacesOneThatMayBeRetried) {
  OomScanner scanner;
  scanner.feed_line(
      "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:1015] failed to allocate 59.25GiB "
      "(63620087808 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory");
  ASSERT_TRUE(scanner.found().has_value());
  EXPECT_TRUE(scanner.found()->may_be_retried);
  scanner.feed_line(
      "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
      "allocate 1073741824 bytes.");
  EXPECT_FALSE(scanner.found()->may_be_retried);
  EXPECT_EQ(scanner.found()->request_bytes, 1_GiB);
}

TEST(OomMessageScanner, APreallocationFailureIsRememberedWhenARicherLineReplacesIt) {
  OomScanner scanner;
  scanner.feed_line(
      "WARNING:jax._src.xla_bridge:CUDA backend failed to initialize: INTERNAL: no supported "
      "devices found for platform CUDA..This may be due to JAX pre-allocating too much device "
      "memory, leaving too little for CUDA library initialization.");
  scanner.feed_line(
      "XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for "
      "176.00MiB (184549376B) on device ordinal 0");
  EXPECT_TRUE(scanner.found()->sizing_setting.empty());
  EXPECT_NE(scanner.sizing_setting().find("XLA_PYTHON_CLIENT_PREALLOCATE"), std::string::npos);
}

// An allocator region larger than the whole budget was sized from the device's total memory.
TEST(OomMessageScanner, ARetriedRegionLargerThanTheBudgetIsTheFrameworkSizingItself) {
  auto xla = recognise_oom_line(
      "E external/xla/xla/stream_executor/cuda/cuda_driver.cc:1015] failed to allocate 59.25GiB "
      "(63620087808 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory");
  ASSERT_TRUE(xla.has_value());
  note_budget(*xla, 80_GiB);
  EXPECT_TRUE(xla->sizing_setting.empty());
  note_budget(*xla, 8_GiB);
  EXPECT_NE(xla->sizing_setting.find("XLA_PYTHON_CLIENT_PREALLOCATE=false"), std::string::npos);
  auto tf = recognise_oom_line(
      "I tensorflow/stream_executor/cuda/cuda_driver.cc:775] failed to allocate 10.09G "
      "(10830902272 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory");
  ASSERT_TRUE(tf.has_value());
  note_budget(*tf, 8_GiB);
  EXPECT_EQ(tf->sizing_setting, "TF_FORCE_GPU_ALLOW_GROWTH=true");
  EXPECT_NE(diagnose_program_oom(*tf).advice.find("TF_FORCE_GPU_ALLOW_GROWTH"), std::string::npos);
}

// The pool refusing an op's request larger than the budget is the program's request, not the
// pool's sizing (measured: a JAX convnet under 8 GiB whose op asked 8.56 GiB of its 6 GiB pool,
// refused, and completed with less).
TEST(OomMessageScanner, AnOpsRequestThePoolRefusedIsNotTheFrameworkSizingItself) {
  auto op = recognise_oom_line(
      "W1129 09:23:31.814018    8435 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of "
      "memory trying to allocate 8.56GiB (rounded to 9193153280) from the lower end requested by "
      "op ");
  ASSERT_TRUE(op.has_value());
  EXPECT_TRUE(op->may_be_retried);
  EXPECT_EQ(op->request_bytes, 9193153280U);
  note_budget(*op, 8_GiB);
  EXPECT_TRUE(op->sizing_setting.empty()) << op->sizing_setting;
}

ProgramOom pytorch_oom(std::uint64_t request, std::uint64_t cached_free) {
  ProgramOom oom;
  oom.framework = "PyTorch";
  oom.request_bytes = request;
  oom.framework_cached_free_bytes = cached_free;
  return oom;
}

TEST(OomMessageDiagnosis, CacheSmallerThanTheRequestIsCapacity) {
  const ProgramOomDiagnosis d = diagnose_program_oom(pytorch_oom(256_MiB, 186688471));
  EXPECT_EQ(d.cause, Cause::capacity);
  EXPECT_EQ(d.evidence, "178.04 MiB reserved by PyTorch but unallocated < 256.00 MiB requested");
  EXPECT_NE(d.advice.find("batch size"), std::string::npos);
  EXPECT_EQ(d.advice.find("expandable_segments"), std::string::npos);
}

TEST(OomMessageDiagnosis, CacheHoldingTheRequestIsFragmentation) {
  const ProgramOomDiagnosis d = diagnose_program_oom(pytorch_oom(764_MiB, 3478923510));
  EXPECT_EQ(d.cause, Cause::fragmentation);
  EXPECT_EQ(d.evidence, "3.24 GiB reserved by PyTorch but unallocated >= 764.00 MiB requested");
  EXPECT_NE(d.advice.find("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"), std::string::npos);
  ProgramOom julia = pytorch_oom(1_GiB, 2_GiB);
  julia.framework = "CUDA.jl";
  EXPECT_EQ(diagnose_program_oom(julia).cause, Cause::fragmentation);
  EXPECT_NE(diagnose_program_oom(julia).advice.find("CUDA.reclaim"), std::string::npos);
}

TEST(OomMessageDiagnosis, NoFiguresIsCapacityAndSaysSo) {
  ProgramOom cupy;
  cupy.framework = "CuPy";
  const ProgramOomDiagnosis d = diagnose_program_oom(cupy);
  EXPECT_EQ(d.cause, Cause::capacity);
  EXPECT_EQ(d.evidence, "the message carries no figures");
  EXPECT_NE(d.advice.find("set_limit"), std::string::npos);
  // Figures are shown as PyTorch's format_size prints them: 1 GiB is still "1024.00 MiB".
  cupy.request_bytes = 1_GiB;
  cupy.framework_allocated_bytes = 2_GiB;
  EXPECT_EQ(diagnose_program_oom(cupy).evidence,
            "1024.00 MiB requested, 2.00 GiB allocated by CuPy");
}

// Lines JAX 0.8 printed on an H100 (driver 580.159.04) under `oomlab exec --budget 4GiB`,
// 2026-11-24 (tests/data/exec/jax_job.py): first the BFC allocator's preallocation of 75% of the
// card refused and retried smaller, then the job went on and completed.
TEST(OomMessageScanner, JaxsRefusedPreallocationOnAnH100IsTheFrameworkSizingItself) {
  OomScanner scanner;
  scanner.feed_line(
      "E1124 20:15:08.731406     898 cuda_executor.cc:1365] [0] Failed to allocate device memory "
      "of 59.38GiB (63763906560 bytes): RESOURCE_EXHAUSTED: : CUDA_ERROR_OUT_OF_MEMORY: out of "
      "memory");
  scanner.feed_line(
      "E1124 20:15:08.731700     898 cuda_executor.cc:1365] [0] Failed to allocate device memory "
      "of 53.45GiB (57387515904 bytes): RESOURCE_EXHAUSTED: : CUDA_ERROR_OUT_OF_MEMORY: out of "
      "memory");
  ASSERT_TRUE(scanner.found());
  ProgramOom oom = *scanner.found();
  EXPECT_TRUE(oom.may_be_retried);
  EXPECT_EQ(oom.request_bytes, 63763906560U);
  EXPECT_EQ(scanner.lines_seen(), 2U);
  note_budget(oom, 4_GiB);
  EXPECT_NE(oom.sizing_setting.find("XLA_PYTHON_CLIENT_PREALLOCATE=false"), std::string::npos)
      << oom.sizing_setting;
}

// The same job with a 32768 x 32768 product under 4 GiB: StreamExecutor's refusals, the BFC
// allocator's warning, then the exception that ended it.
TEST(OomMessageScanner, TheRaisedJaxErrorWinsOverTheAllocatorsWarningsBeforeIt) {
  OomScanner scanner;
  scanner.feed_line(
      "E1124 20:15:28.440746    1186 cuda_executor.cc:1365] [0] Failed to allocate device memory "
      "of 4.00GiB (4294967296 bytes): RESOURCE_EXHAUSTED: : CUDA_ERROR_OUT_OF_MEMORY: out of "
      "memory");
  scanner.feed_line(
      "W1124 20:15:28.440755    1186 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of "
      "memory trying to allocate 4.00GiB (rounded to 4294967296) from the lower end requested "
      "by op ");
  // The last line of the HLO dump JAX prints before it raises: the same words, not the raise.
  scanner.feed_line(
      "}, metadata={op_name=\"jit(matmul)/dot_general\" stack_frame_id=1}, "
      "backend_config={\"operation_queue_id\":\"0\"} RESOURCE_EXHAUSTED: Out of memory while "
      "trying to allocate 4.02GiB with allocator GPU_0_bfc on device 0. "
      "[tf-allocator-allocation-error='']");
  scanner.feed_line(
      "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
      "4.02GiB with allocator GPU_0_bfc on device 0. [tf-allocator-allocation-error='']");
  ASSERT_TRUE(scanner.found());
  EXPECT_EQ(scanner.found()->framework, "JAX/XLA");
  EXPECT_FALSE(scanner.found()->may_be_retried);
  EXPECT_TRUE(scanner.found()->line.starts_with("jax.errors.JaxRuntimeError"));
  EXPECT_EQ(scanner.found()->request_bytes, 4316442132U) << "4.02 GiB as XLA rounds it";
  EXPECT_EQ(scanner.lines_seen(), 4U);
}

// JAX 0.11.2 on the H200, a GRU whose step's buffers no longer fit: XLA's autotuner is refused
// the memory to time every candidate of some instructions, logs each failure (an HLO fragment
// ending in XLA's words) and the compile fails; the raised line puts its example failure, with
// the size, on the next line. That raise is the OOM, with its size and the user's line.
TEST(OomMessageScanner, TheAutotunersFailedCompileIsTheRaiseWithTheSizeOnItsNextLine) {
  OomScanner scanner;
  scanner.feed_line(
      "W1130 10:10:48.613340    1004 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of "
      "memory trying to allocate 12.02GiB (rounded to 12901679104) from the lower end requested "
      "by op ");
  // XLA's log, which exec reads beside the output in time order: the pool's summary.
  scanner.feed_line(
      "I1130 10:10:48.613900    1004 bfc_allocator.cc:1477] Allocator memory summary: rounded "
      "request 12.02GiB, total free in pool 5.80GiB, largest free chunk usable by lower end "
      "5.80GiB, unallocated bytes 0B, pool size 6.00GiB, pool limit 6.00GiB");
  scanner.feed_line(
      "}, metadata={op_name=\"jit(train)/transpose(jvp())/dot_general\" stack_frame_id=45}, "
      "backend_config={\"operation_queue_id\":\"0\"}. Status: RESOURCE_EXHAUSTED: Out of memory "
      "while trying to allocate 12.02GiB with allocator GPU_0_bfc on device 0. "
      "[tf-allocator-allocation-error='']");
  scanner.feed_line("Traceback (most recent call last):");
  scanner.feed_line("  File \"/work/gru_lm.py\", line 55, in <module>");
  scanner.feed_line("    params, ms, loss = train(params, ms, data[:, :-1], data[:, 1:])");
  scanner.feed_line(
      "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Failed to get configs for: 8 out of 41 "
      "instructions. See logs for all failures. Example failure: ");
  scanner.feed_line(
      "Out of memory while trying to allocate 12.02GiB with allocator GPU_0_bfc on device 0. "
      "[tf-allocator-allocation-error='']");
  scanner.feed_line("--------------------");
  ASSERT_TRUE(scanner.found());
  const ProgramOom& oom = *scanner.found();
  EXPECT_EQ(oom.framework, "JAX/XLA");
  EXPECT_TRUE(
      oom.line.starts_with("jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Failed to "
                           "get configs"))
      << oom.line;
  EXPECT_EQ(oom.request_bytes, 12906376724U) << "12.02 GiB as XLA prints it";
  EXPECT_EQ(oom.framework_limit_bytes, 6_GiB) << "the pool's figures, carried to the raise";
  ASSERT_FALSE(oom.traceback.empty());
  EXPECT_EQ(oom.traceback.back().frame, "<module> (/work/gru_lm.py:55)")
      << oom.traceback.back().frame;
  // Its next line alone is no OOM line of its own: the scanner saw three.
  EXPECT_EQ(scanner.lines_seen(), 3U);
}

// oomlab_cuda_hog's own check of cudaMalloc on the H100 (tests/programs/cuda_hog.cpp).
TEST(OomMessageScanner, ACudaProgramsOwnCheckIsTheRuntimeNotPyTorch) {
  const auto oom = recognise_oom_line(
      "CUDA error: out of memory (cudaErrorMemoryAllocation) after 469762048 bytes");
  ASSERT_TRUE(oom);
  EXPECT_EQ(oom->framework, "CUDA runtime");
  const auto torch = recognise_oom_line("RuntimeError: CUDA error: out of memory");
  ASSERT_TRUE(torch);
  EXPECT_EQ(torch->framework, "PyTorch");
}

}  // namespace
}  // namespace oomlab
