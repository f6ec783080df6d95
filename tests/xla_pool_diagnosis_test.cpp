// The diagnosis of an OOM in XLA's BFC pool from its summary (free in it, its largest piece, its
// limit, what the card had left), and those figures found again when a run folder is re-read
// with XLA's log kept apart from the program's stderr (exec/output_rescan.hpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "exec/oom_message.hpp"
#include "exec/output_rescan.hpp"
#include "jax/exec/xla_program.hpp"
#include "oomlab/units.hpp"
#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using namespace oomlab::literals;

// The pool's summary beside the request: free memory in it (and what it may still take) as large
// as the request, but no piece that holds it, is fragmentation.
TEST(XlaPoolDiagnosis, FreeEnoughButInPiecesIsFragmentation) {
  oomlab::OomScanner scanner;
  scanner.feed_line(
      "W1129 01:46:30.393993     511 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of "
      "memory trying to allocate 2.00GiB (rounded to 2147483648) from the lower end requested by "
      "op ");
  scanner.feed_line(
      "I1129 01:46:30.394531     511 bfc_allocator.cc:1475] Sum Total of in-use "
      "chunks: 3.00GiB");
  scanner.feed_line(
      "I1129 01:46:30.394532     511 bfc_allocator.cc:1477] Allocator memory summary: rounded "
      "request 2.00GiB, total free in pool 2.50GiB, largest free chunk usable by lower end "
      "1.00GiB, unallocated bytes 0B, pool size 5.50GiB, pool limit 5.50GiB");
  scanner.feed_line(
      "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
      "to allocate 2.00GiB with allocator GPU_0_bfc on device 0.");
  ASSERT_TRUE(scanner.found().has_value());
  const oomlab::ProgramOom& oom = *scanner.found();
  EXPECT_FALSE(oom.may_be_retried);  // the raise, with the warning's figures
  const oomlab::ProgramOomDiagnosis diagnosis = oomlab::diagnose_program_oom(oom);
  EXPECT_EQ(diagnosis.cause, oomlab::Cause::fragmentation) << diagnosis.evidence;
  EXPECT_NE(diagnosis.evidence.find("largest piece 1024.00 MiB"), std::string::npos)
      << diagnosis.evidence;
}

// As JAX 0.11.2 logged it on an H200 (jax_convnet.py --batch 64 at 4 GiB): the autotuner's
// scratch requests the pool refused and the program survived, each with its warning, then the
// request it died of. The raise takes the figures of its own request's warning, not an earlier's.
TEST(XlaPoolDiagnosis, TheRaiseTakesItsOwnRequestsFiguresNotASurvivedOnes) {
  oomlab::OomScanner scanner;
  const auto warning = [&](const char* size, const char* rounded, const char* in_use,
                           const char* free) {
    scanner.feed_line(fmt::format(
        "W1129 03:08:39.644499    1259 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of "
        "memory trying to allocate {} (rounded to {}) from the lower end requested by op ",
        size, rounded));
    scanner.feed_line(fmt::format(
        "I1129 03:08:39.644600    1259 bfc_allocator.cc:1475] Sum Total of in-use chunks: {}",
        in_use));
    scanner.feed_line(fmt::format(
        "I1129 03:08:39.644601    1259 bfc_allocator.cc:1477] Allocator memory summary: rounded "
        "request {}, total free in pool {}, largest free chunk usable by lower end {}, "
        "unallocated bytes 0B, pool size 3.00GiB, pool limit 3.00GiB",
        size, free, free));
  };
  warning("2.51GiB", "2691498752", "0.20GiB", "2.80GiB");
  scanner.feed_line(
      "W1129 03:08:39.644852    1259 bfc_allocator.cc:371] Allocator (GPU_0_bfc) ran out of "
      "memory trying to allocate 2.51GiB from the lower end with freed_by_count=0. The caller "
      "indicates that this is not a failure, but this may mean that there could be performance "
      "gains if more memory were available.");
  warning("4.19GiB", "4499999744", "1.10GiB", "1.90GiB");
  scanner.feed_line(
      "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
      "to allocate 4.19GiB with allocator GPU_0_bfc on device 0.");
  ASSERT_TRUE(scanner.found().has_value());
  const oomlab::ProgramOom& oom = *scanner.found();
  ASSERT_TRUE(oom.framework_allocated_bytes.has_value());
  EXPECT_NEAR(static_cast<double>(*oom.framework_allocated_bytes) / 1_GiB, 1.10, 0.005);
  const oomlab::ProgramOomDiagnosis diagnosis = oomlab::diagnose_program_oom(oom);
  EXPECT_EQ(diagnosis.cause, oomlab::Cause::capacity);
  EXPECT_NE(diagnosis.evidence.find("1.10 GiB in use + 4.19 GiB requested"), std::string::npos)
      << diagnosis.evidence;
}

// A run folder re-read: exec kept XLA's INFO lines (the pool's summary) in xla-log.txt apart
// from stderr, where the warning and the raise stayed. The log goes back among them by its
// lines' times, so the raise takes the summary's figures as the run did (fragmentation), not a
// bare request (capacity, which reading the log first or last gave).
TEST(XlaPoolDiagnosis, AReReadRunPutsTheKeptLogBackByItsTimes) {
  const fs::path folder = oomlab::testing::fresh_temp_folder("xla-rescan");
  std::ofstream(folder / "stderr.txt")
      << "W1129 01:46:30.393993     511 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of "
         "memory trying to allocate 2.00GiB (rounded to 2147483648) from the lower end "
         "requested by op \n"
         "W1129 01:46:30.394600     511 bfc_allocator.cc:609] ****____\n"
         "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
         "allocate 2.00GiB with allocator GPU_0_bfc on device 0.\n";
  std::ofstream(folder / "xla-log.txt")
      << "I1129 01:46:29.000000     511 gpu_helpers.cc:162] XLA backend allocating 5.50GiB "
         "(5905580032 bytes) on device 0 for BFCAllocator.\n"
         "I1129 01:46:30.394531     511 bfc_allocator.cc:1475] Sum Total of in-use chunks: "
         "3.00GiB\n"
         "I1129 01:46:30.394532     511 bfc_allocator.cc:1477] Allocator memory summary: rounded "
         "request 2.00GiB, total free in pool 2.50GiB, largest free chunk usable by lower end "
         "1.00GiB, unallocated bytes 0B, pool size 5.50GiB, pool limit 5.50GiB\n"
         "I1129 01:46:30.500000     511 bfc_allocator.cc:963] DeallocateRaw GPU_0_bfc 24\n";
  const oomlab::KeptLog log{.file = folder / "xla-log.txt",
                            .line_time = &oomlab::jax::xla_line_time};
  const oomlab::OutputRescan scan = oomlab::rescan_output({folder / "stderr.txt"}, &log);
  ASSERT_TRUE(scan.oom.has_value());
  EXPECT_FALSE(scan.oom->may_be_retried) << "the raise is the OOM";
  const oomlab::ProgramOomDiagnosis diagnosis = oomlab::diagnose_program_oom(*scan.oom);
  EXPECT_EQ(diagnosis.cause, oomlab::Cause::fragmentation) << diagnosis.evidence;
  const oomlab::OutputRescan log_first =
      oomlab::rescan_output({folder / "xla-log.txt", folder / "stderr.txt"});
  ASSERT_TRUE(log_first.oom.has_value());
  EXPECT_NE(oomlab::diagnose_program_oom(*log_first.oom).cause, oomlab::Cause::fragmentation)
      << "the log read whole before the output loses the summary: the test would prove nothing";
  EXPECT_EQ(oomlab::jax::xla_line_time("Traceback (most recent call last):"), std::nullopt);
}

// The same across midnight: the log began before it, the OOM came after; each stream's clock runs
// on into the next day.
TEST(XlaPoolDiagnosis, AReReadRunAcrossMidnightKeepsTheLogsOrder) {
  const fs::path folder = oomlab::testing::fresh_temp_folder("xla-rescan-midnight");
  std::ofstream(folder / "stderr.txt")
      << "W1130 00:00:00.393993     511 bfc_allocator.cc:598] Allocator (GPU_0_bfc) ran out of "
         "memory trying to allocate 2.00GiB (rounded to 2147483648) from the lower end "
         "requested by op \n"
         "W1130 00:00:00.394600     511 bfc_allocator.cc:609] ****____\n"
         "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
         "allocate 2.00GiB with allocator GPU_0_bfc on device 0.\n";
  std::ofstream(folder / "xla-log.txt")
      << "I1129 23:59:59.000000     511 gpu_helpers.cc:162] XLA backend allocating 5.50GiB "
         "(5905580032 bytes) on device 0 for BFCAllocator.\n"
         "I1130 00:00:00.394532     511 bfc_allocator.cc:1477] Allocator memory summary: rounded "
         "request 2.00GiB, total free in pool 2.50GiB, largest free chunk usable by lower end "
         "1.00GiB, unallocated bytes 0B, pool size 5.50GiB, pool limit 5.50GiB\n"
         "I1130 00:00:00.394533     511 bfc_allocator.cc:1475] Sum Total of in-use chunks: "
         "3.00GiB\n";
  const oomlab::KeptLog log{.file = folder / "xla-log.txt",
                            .line_time = &oomlab::jax::xla_line_time};
  const oomlab::OutputRescan scan = oomlab::rescan_output({folder / "stderr.txt"}, &log);
  ASSERT_TRUE(scan.oom.has_value());
  EXPECT_EQ(oomlab::diagnose_program_oom(*scan.oom).cause, oomlab::Cause::fragmentation);
}

// A card short of the pool's limit is the cause only where the pool's own free memory does not
// hold the request: "1.28GiB" free (at least 1.275 GiB) for 1.273 GiB asked is pieces.
TEST(XlaPoolDiagnosis, ACardShortOfTheLimitIsTheCauseOnlyWhereThePoolsFreeFallsShort) {
  oomlab::ProgramOom oom;
  oom.framework = "JAX/XLA";
  oom.request_bytes = 1'366'941'184;
  oom.framework_limit_bytes = 3'307'208'704;
  oom.framework_allocated_bytes = 1'610'612'736;
  oom.framework_cached_free_bytes = 1'363'652'116;  // "1.27GiB"
  EXPECT_EQ(oomlab::diagnose_program_oom(oom, 40_MiB).cause, oomlab::Cause::capacity);
  EXPECT_EQ(oomlab::diagnose_program_oom(oom).cause, oomlab::Cause::fragmentation)
      << "without the card's free memory, the limit's room counts";
  EXPECT_EQ(oomlab::diagnose_program_oom(oom, 2_GiB).cause, oomlab::Cause::fragmentation)
      << "a card with room for the growth is not short";
  oom.framework_cached_free_bytes = 1'374'389'535;  // "1.28GiB"
  EXPECT_EQ(oomlab::diagnose_program_oom(oom, 40_MiB).cause, oomlab::Cause::fragmentation);
}

}  // namespace
