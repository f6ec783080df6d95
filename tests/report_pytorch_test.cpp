// A replayed PyTorch program's OOM everywhere a run is reported: PyTorch's own account and
// message, the failing request's stack and the largest live blocks, in the human summary and in
// the run reports (escaped in HTML). The reports' other content: report_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "device/cards.hpp"
#include "pytorch/model/torch_options.hpp"
#include "pytorch/reports/whatif_report.hpp"
#include "reports/run/human_summary.hpp"
#include "reports/run/run_report.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/html_report.hpp"
#include "reports/writers/markdown_report.hpp"
#include "reports/writers/report_content.hpp"
#include "run/runner.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;

RunResult torch_replay(const std::string& job, std::uint64_t budget,
                       const std::string& budget_by = "device") {
  RunConfig config = testing::make_run_config("replay", "torch", budget);
  config.params.set("trace", testing::test_data_dir() + "/pytorch/" + job + ".pickle");
  config.allocator_options.set("budget_by", budget_by);
  config.probe = false;
  return run_scenario(config);
}

// The run's summary.json written to a folder of its own, and read back as `oomlab report` does.
RunReport report_of(const RunResult& result, const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("oomlab_report_pytorch_test_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "summary.json") << summary_json(result, {}).dump(2);
  return load_run_report(dir);
}

TEST(ReportPytorch, CappedJobShowsPyTorchsFiguresAndMessage) {
  const RunResult r = torch_replay("grow_cap2g_native", 2'147'483'648, "fraction");
  ASSERT_TRUE(r.oom && r.oom->cache);
  const std::string summary = human_summary(r, "");
  EXPECT_NE(summary.find("pytorch    tried to allocate 256.00 MiB · 1.73 GiB allocated by "
                         "PyTorch · 178.04 MiB reserved but unallocated · 2.00 GiB allowed"),
            std::string::npos)
      << summary;
  const RunReport report = report_of(r, "capped");
  ASSERT_TRUE(report.oom && report.oom->cache);
  EXPECT_EQ(report.oom->cache, r.oom->cache);
  EXPECT_EQ(report.oom->cache->allowed_bytes, 2'147'483'648U);
  for (const std::string& text : {run_html(report), run_markdown(report)}) {
    EXPECT_NE(text.find("PyTorch says"), std::string::npos);
    EXPECT_NE(text.find("Tried to allocate 256.00 MiB"), std::string::npos);
    EXPECT_NE(text.find("1.73 GiB is allocated by PyTorch, and 178.04 MiB is reserved by PyTorch "
                        "but unallocated"),
              std::string::npos);
  }
}

// "GPU 0 has a total capacity of 80.00 GiB" for a 1.5 GiB budget: the card is the budget's (a
// named card's memory, a size's own); under a fraction cap the card is the whole modelled one.
TEST(ReportPytorch, PyTorchsMessageNamesTheCardOfTheBudgetNotTheModelledMachine) {
  const std::uint64_t budget = 1536_MiB;
  const RunResult r = torch_replay("grow_native", budget);
  ASSERT_TRUE(r.oom && r.oom->cache);
  EXPECT_EQ(r.oom->device_total_bytes, budget);
  EXPECT_NE(cache_message(*r.oom).find("GPU 0 has a total capacity of 1.50 GiB of which "),
            std::string::npos)
      << cache_message(*r.oom);
  bool found = false;
  for (const ReportRow& row : oom_rows(*r.oom)) {
    if (row.label != "Device free") continue;
    found = true;
    EXPECT_TRUE(row.value.ends_with(" of 1.50 GiB")) << row.value;
  }
  EXPECT_TRUE(found);

  RunConfig card = testing::make_run_config("fragmentation", "torch", 0);  // OOMs on any card
  card.budget = {.kind = BudgetRequest::Kind::card, .card = card_named("T4")};
  card.probe = false;
  const RunResult t4 = run_scenario(card);
  ASSERT_TRUE(t4.oom && t4.oom->cache);
  EXPECT_EQ(t4.oom->device_total_bytes, card_named("T4")->total_bytes);
  EXPECT_NE(cache_message(*t4.oom).find("total capacity of 15.00 GiB"), std::string::npos)
      << cache_message(*t4.oom);

  const RunResult capped = torch_replay("grow_cap2g_native", 2'147'483'648, "fraction");
  ASSERT_TRUE(capped.oom && capped.oom->cache);
  EXPECT_EQ(capped.oom->device_total_bytes, 80_GiB) << "a fraction caps the whole card";
}

// A replay's OOM is named by the trace's own entry everywhere a reader sees it (the headline,
// the OOM table, the chart's label), never by the run's event number for the same request.
TEST(ReportPytorch, AReplaysOomIsNamedByItsTraceEntryEverywhere) {
  const RunResult r = torch_replay("grow_cap2g_native", 2'147'483'648, "fraction");
  ASSERT_TRUE(r.oom && r.oom->trace_entry);
  ASSERT_NE(r.oom->event, *r.oom->trace_entry);
  const RunReport report = report_of(r, "numbering");
  const std::string entry = "trace entry " + format_count(*r.oom->trace_entry);
  const std::string event = "event " + format_count(r.oom->event);
  for (const std::string& text : {run_html(report), run_markdown(report)}) {
    EXPECT_NE(text.find("OOM at " + entry), std::string::npos) << text.substr(0, 2000);
    EXPECT_EQ(text.find(event), std::string::npos) << "the same request by another number";
  }
}

TEST(ReportPytorch, StackAndLargestLiveBlocksInSummaryAndReports) {
  const RunResult r = torch_replay("train_fixed_native", 1536_MiB);
  ASSERT_TRUE(r.oom);
  ASSERT_FALSE(r.oom->frames.empty());
  ASSERT_FALSE(r.oom->largest_live.empty());
  const std::string summary = human_summary(r, "");
  EXPECT_NE(summary.find("frames     " + r.oom->frames.front()), std::string::npos) << summary;
  const ProgramBlock& largest = r.oom->largest_live.front();
  EXPECT_NE(
      summary.find(fmt::format("blocks     {} live since entry {}", format_bytes(largest.bytes),
                               format_count(largest.trace_index))),
      std::string::npos)
      << summary;

  const RunReport report = report_of(r, "stacks");
  ASSERT_TRUE(report.oom);
  EXPECT_EQ(report.oom->frames, r.oom->frames);
  ASSERT_EQ(report.oom->largest_live.size(), r.oom->largest_live.size());
  const std::string html = run_html(report);
  const std::string md = run_markdown(report);
  EXPECT_NE(html.find("id=\"oom-frames\""), std::string::npos);
  EXPECT_NE(html.find("id=\"largest-live\""), std::string::npos);
  EXPECT_NE(md.find("### The failing request's stack"), std::string::npos);
  EXPECT_NE(md.find("### The largest live blocks then"), std::string::npos);
  EXPECT_NE(
      md.find("| " + format_bytes(largest.bytes) + " | entry " + format_count(largest.trace_index)),
      std::string::npos);
}

// The value of row `label` in the run report's facts.
std::string row_value(const RunReport& report, const std::string& label) {
  for (const ReportRow& row : run_rows(report)) {
    if (row.label == label) return row.value;
  }
  ADD_FAILURE() << "no row " << label;
  return {};
}

// Option values in a run's report are written as whatif writes them (one formatter,
// format_param_value): PyTorch's unlimited max_split_size is "max", sizes are sizes; never the
// raw integers summary.json holds.
TEST(ReportPytorch, OptionValuesAreWrittenAsWhatifWritesThem) {
  const RunReport report = report_of(torch_replay("train_fixed_native", 16_GiB), "options");
  const std::string allocator = row_value(report, "Allocator");
  WhatIfResult whatif{.trace = "train_fixed_native.pickle", .upper_bytes = 80_GiB};
  WhatIfRow& native = whatif.rows.emplace_back();
  native.setting = "native";
  native.options = Params(torch::torch_option_spec());
  whatif.native = 0;
  const std::string whatif_md = whatif_markdown(whatif);
  for (const std::string& setting :
       {"max_split_size=" + format_param_value(Bytes{UINT64_MAX}),
        std::string("large_segment_size=20MiB"), std::string("expandable_segments=off")}) {
    EXPECT_NE(allocator.find(setting), std::string::npos) << allocator;
    EXPECT_NE(whatif_md.find(setting), std::string::npos) << whatif_md;
  }
  EXPECT_NE(allocator.find("total=80GiB"), std::string::npos) << allocator;
  for (const std::string& text : {run_html(report), run_markdown(report)}) {
    EXPECT_EQ(text.find("18446744073709551615"), std::string::npos);
    EXPECT_EQ(text.find("20971520"), std::string::npos);
  }
  const std::string parameters = row_value(report, "Parameters");
  EXPECT_NE(parameters.find("strict=off"), std::string::npos) << "flags as on/off: " << parameters;
}

// Python names frames "<module>" and "<lambda>": text in HTML, never markup.
TEST(ReportPytorch, FramesAreEscapedInHtml) {
  RunResult r;
  r.scenario = "replay";
  r.allocator = "torch";
  r.outcome = Outcome::oom;
  r.oom = OomRecord{};
  r.oom->frames = {"<module> (train.py:12)", "f<script>x</script> (a&b.py:3)"};
  r.oom->largest_live = {{.bytes = 1_GiB, .trace_index = 7, .frames = {"<lambda> (m.py:1)"}}};
  const std::string html = run_html(report_of(r, "escaped"));
  EXPECT_NE(html.find("&lt;module&gt; (train.py:12)"), std::string::npos);
  EXPECT_NE(html.find("&lt;lambda&gt; (m.py:1)"), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<module>"), std::string::npos);
}

}  // namespace
}  // namespace oomlab
