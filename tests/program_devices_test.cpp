// `exec` on several devices, in words: the console summary and the report speak of each device
// against its own budget, lead with the failing device (the failing rank's, else the one closest
// to its budget), and print no what-if table without rows. A run on one device reads as before.
#include "reports/run/program_devices.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <utility>

#include "oomlab/units.hpp"
#include "reports/run/program_summary.hpp"
#include "reports/run/run_report.hpp"
#include "reports/writers/html_report.hpp"
#include "reports/writers/markdown_report.hpp"
#include "reports/writers/report_content.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;

// Every "NN.N%" in `text` is at most 100%: no figure is shown against a budget it is not of.
void expect_no_share_over_a_whole(const std::string& text) {
  const std::regex share(R"(([0-9]+(\.[0-9]+)?)%)");
  std::size_t shares = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), share);
       it != std::sregex_iterator(); ++it) {
    ++shares;
    EXPECT_LE(std::stod((*it)[1].str()), 100.0) << it->str() << " in\n" << text;
  }
  EXPECT_GT(shares, 0U) << "each device's share of its budget is shown:\n" << text;
}

OomRecord program_oom() {
  OomRecord oom;
  oom.t_ms = 3210.0;
  oom.request_bytes = 256_MiB;
  oom.live_bytes = 8_GiB + 512_MiB;
  oom.reserved_bytes = 8_GiB + 768_MiB;
  oom.diagnosis.cause = Cause::capacity;
  oom.diagnosis.evidence = "the program's own message";
  oom.diagnosis.advice = "a smaller batch";
  oom.diagnosis.free_bytes = 256_MiB;
  oom.program = ProgramMessage{.framework = "PyTorch",
                               .line = "torch.OutOfMemoryError: CUDA out of memory.",
                               .lines_seen = 1};
  oom.source = "program";
  return oom;
}

// torchrun --nproc-per-node 2 under --devices 0,1 --budget 9GiB: each device peaks at 7 GiB,
// under its own budget, 14 GiB together; GPU 1 took more of its budget.
RunResult two_device_run() {
  RunResult r;
  r.device = DeviceFacts{.index = 0, .name = "NVIDIA H100 80GB HBM3", .total_bytes = 80_GiB};
  r.environment.driver_version = "550.54.15";
  r.budget_bytes = 9_GiB;
  r.outcome = Outcome::completed;
  r.duration_ms = 12345.0;
  ProgramRun p{.command = {"torchrun", "--nproc-per-node", "2", "ddp.py"}, .devices = {0, 1}};
  p.exit_code = 0;
  p.peak_bytes = 14_GiB;
  p.peak_used_bytes = 14_GiB + 768_MiB;
  p.first_bytes = 1_GiB;
  p.usage_source = "nvml-processes";
  p.samples = 1234;
  p.interval_ms = 5.0;
  p.snapshot_note = "--no-snapshot";
  p.device_runs = {DeviceRun{.index = 0,
                             .budget_bytes = 9_GiB,
                             .peak_bytes = 7_GiB,
                             .peak_used_bytes = 7_GiB + 256_MiB,
                             .first_bytes = 512_MiB},
                   DeviceRun{.index = 1,
                             .budget_bytes = 9_GiB,
                             .peak_bytes = 7_GiB,
                             .peak_used_bytes = 7_GiB + 512_MiB,
                             .first_bytes = 512_MiB}};
  r.program = std::move(p);
  return r;
}

// The same job where rank 1 ran out of memory on GPU 1.
RunResult rank_one_ran_out() {
  RunResult r = two_device_run();
  r.outcome = Outcome::oom;
  r.program->exit_code = 1;
  r.program->device_runs[1].peak_bytes = 8_GiB + 512_MiB;
  r.program->device_runs[1].peak_used_bytes = 8_GiB + 768_MiB;
  r.program->peak_bytes = 15_GiB + 512_MiB;
  r.program->failing_rank =
      FailingRank{.rank = 1, .device = 1, .verdict = "rank 1 (GPU 1) ran out of memory at 3.21 s"};
  r.oom = program_oom();
  return r;
}

ProgramModel model_on(int device, std::size_t rows) {
  ProgramModel m{.snapshot = fmt::format("snapshots/rank{}.pickle", device), .device = device};
  m.reproduction = fmt::format("reproduced on its device {}", device);
  m.budget_bytes = 8_GiB;
  for (std::size_t i = 0; i < rows; ++i) {
    ModelRow row;
    row.setting = i == 0 ? "native" : "expandable_segments";
    row.completes_at_budget = i != 0;
    m.whatif.push_back(row);
  }
  return m;
}

RunReport as_report(const RunResult& r) {
  RunReport report;
  static_cast<RunResult&>(report) = r;
  return report;
}

TEST(ProgramDevices, TwoDevicesEachUnderItsBudgetNeverShowMoreThanOneWholeBudget) {
  const RunResult r = two_device_run();
  const std::string text = program_summary(r, "");
  expect_no_share_over_a_whole(text);
  EXPECT_EQ(text.find("155."), std::string::npos) << text;
  const RunReport report = as_report(r);
  for (const ReportRow& row : run_rows(report)) {
    EXPECT_EQ(row.value.find("% of the budget"), std::string::npos)
        << row.label << ": " << row.value;
  }
  expect_no_share_over_a_whole(run_markdown(report));
}

TEST(ProgramDevices, WithoutAFailingRankTheDeviceClosestToItsBudgetLeadsTheHeadline) {
  const std::string text = program_summary(two_device_run(), "");
  EXPECT_NE(text.find("memory     GPU 1 (the closest to its budget): peak 7.00 GiB (77.8% of its "
                      "9.00 GiB budget) · 512 MiB at the first sample that saw any · 14.0 GiB on "
                      "the 2 devices together at the most · 1,234 samples every 5 ms "
                      "(nvml-processes)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("oomlab exec · budget 9.00 GiB on each of GPUs 0, 1 · NVIDIA H100 80GB "
                      "HBM3 (devices 0, 1, driver 550.54.15)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("gpu 0      budget 9.00 GiB · peak 7.00 GiB (77.8% of it) · 7.25 GiB of it "
                      "taken\n"),
            std::string::npos)
      << text;
}

TEST(ProgramDevices, TheHeadlineNamesTheFailingRanksDeviceWithItsOwnPeakAndBudget) {
  const RunResult r = rank_one_ran_out();
  const std::string text = program_summary(r, "");
  EXPECT_NE(text.find("memory     GPU 1 (rank 1 ran out): peak 8.50 GiB (94.4% of its 9.00 GiB "
                      "budget)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("at         3.21 s on GPU 1 · request 256 MiB · the program used 8.50 GiB "
                      "there · 8.75 GiB of its 9.00 GiB budget taken · 256 MiB of it free\n"),
            std::string::npos)
      << text;
  expect_no_share_over_a_whole(text);
  const RunReport report = as_report(r);
  EXPECT_NE(run_headline(report).find("with 8.50 GiB live on GPU 1: cause capacity · budget 9.00 "
                                      "GiB on GPU 1"),
            std::string::npos)
      << run_headline(report);
  const std::string md = run_markdown(report);
  EXPECT_NE(md.find("| Peak | 8.50 GiB (94.4% of its 9.00 GiB budget) on GPU 1 (rank 1 ran out); "
                    "15.5 GiB on the 2 devices together (nvml-processes) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| GPU 0 | budget 9.00 GiB · peak 7.00 GiB (77.8% of it)"), std::string::npos)
      << md;
}

TEST(ProgramDevices, AModelWithoutRowsPrintsNoWhatifHeader) {
  RunResult r = rank_one_ran_out();
  r.models = {model_on(1, 0)};
  const std::string text = program_summary(r, "");
  EXPECT_NE(text.find("model      GPU 1: reproduced on its device 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("whatif"), std::string::npos) << text;
  const RunReport report = as_report(r);
  EXPECT_EQ(run_html(report).find("model-whatif"), std::string::npos);
  EXPECT_EQ(run_markdown(report).find("| Setting |"), std::string::npos);
}

TEST(ProgramDevices, EachDevicesModelIsShownTheFailingDevicesFirst) {
  RunResult r = rank_one_ran_out();
  r.models = {model_on(0, 2), model_on(1, 2)};
  const std::string text = program_summary(r, "");
  EXPECT_NE(text.find("model      GPU 1: reproduced on its device 1 (snapshot rank1.pickle)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("also       GPU 0: rank0.pickle: reproduced on its device 0"),
            std::string::npos)
      << text;
  const std::string md = run_markdown(as_report(r));
  const auto gpu1 = md.find(
      "## The model of PyTorch's allocator (the snapshot of the process on "
      "GPU 1)");
  const auto gpu0 = md.find(
      "## The model of PyTorch's allocator (the snapshot of the process on "
      "GPU 0)");
  ASSERT_NE(gpu1, std::string::npos) << md;
  ASSERT_NE(gpu0, std::string::npos) << md;
  EXPECT_LT(gpu1, gpu0) << "the failing device's model first";
}

// The first op=oom row of an events CSV: its live_bytes and reserved_bytes.
std::pair<std::uint64_t, std::uint64_t> oom_row(const std::filesystem::path& csv) {
  std::ifstream in(csv);
  for (std::string row; std::getline(in, row);) {
    std::vector<std::string> f;
    std::stringstream fields(row);
    for (std::string field; std::getline(fields, field, ',');)
      f.push_back(field);
    if (f.size() == 12 && f[4] == "oom") return {std::stoull(f[10]), std::stoull(f[11])};
  }
  ADD_FAILURE() << "no oom row in " << csv;
  return {};
}

// torchrun on GPUs 0 and 1 (tests/data/captured/ddp_2rank), rank 1 out of memory on GPU 1: its
// summary.json, from an exec before the OOM record was kept per device, holds both devices'
// memory summed; the report reads GPU 1's own from its events file, and the console summary of
// the same record says the same figures.
TEST(ProgramDevices, TheReportOfTwoRanksNamesTheFailingDevicesOwnFiguresNotTheirSum) {
  const std::filesystem::path folder = testing::fresh_temp_folder("program_devices_ddp") / "run";
  std::filesystem::copy(std::filesystem::path(testing::test_data_dir()) / "captured" / "ddp_2rank",
                        folder, std::filesystem::copy_options::recursive);
  const auto [gpu1_live, gpu1_reserved] = oom_row(folder / "events-gpu1.csv");
  const auto [summed_live, summed_reserved] = oom_row(folder / "events.csv");
  ASSERT_LT(gpu1_live, summed_live);
  const RunReport report = load_run_report(folder);
  const std::string headline = run_headline(report);
  EXPECT_NE(headline.find(fmt::format("with {} live on GPU 1", format_bytes(gpu1_live))),
            std::string::npos)
      << headline;
  EXPECT_EQ(headline.find(format_bytes(summed_live)), std::string::npos) << headline;
  const std::string md = run_markdown(report);
  EXPECT_NE(md.find(fmt::format("| Program's memory | {} (NVML) |", format_bytes(gpu1_live))),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(fmt::format("| Budget taken | {} |", format_bytes(gpu1_reserved))),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("## Memory over the run: the 2 devices together"), std::string::npos) << md;
  const std::string console = program_summary(report, "");
  EXPECT_NE(console.find(fmt::format("the program used {} there · {} of its {} budget taken",
                                     format_bytes(gpu1_live), format_bytes(gpu1_reserved),
                                     format_bytes(report.program->device_runs[1].budget_bytes))),
            std::string::npos)
      << console;
}

// One device: the summary as it always read, byte for byte.
TEST(ProgramDevices, OneDeviceSummaryReadsAsBefore) {
  RunResult r = rank_one_ran_out();
  r.program->devices = {0};
  r.program->device_runs.resize(1);
  r.program->failing_rank.reset();
  r.program->peak_bytes = 8_GiB + 512_MiB;
  r.program->first_bytes = 512_MiB;
  r.program->command = {"python", "train.py"};
  EXPECT_EQ(program_summary(r, ""),
            "oomlab exec · budget 9.00 GiB · NVIDIA H100 80GB HBM3 (device 0, driver 550.54.15)\n"
            "program    python train.py\n"
            "outcome    oom (exit code 1, 12.3 s)\n"
            "oom line   PyTorch: torch.OutOfMemoryError: CUDA out of memory.\n"
            "at         3.21 s · request 256 MiB · the program used 8.50 GiB · 8.75 GiB of the "
            "budget taken · 256 MiB of it free\n"
            "cause      capacity (program): the program's own message\n"
            "advice     a smaller batch\n"
            "memory     peak 8.50 GiB (94.4% of the budget) · 512 MiB at the first sample that "
            "saw any · 1,234 samples every 5 ms (nvml-processes)\n"
            "snapshot   none: --no-snapshot\n");
  const RunReport report = as_report(r);
  EXPECT_EQ(run_headline(report),
            "OOM at event 0 (step 0) asking for 256 MiB with 8.50 GiB live: cause capacity · "
            "budget 9.00 GiB");
}

}  // namespace
}  // namespace oomlab
