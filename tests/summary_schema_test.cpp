// summary.json is one schema: a RunResult with every field set, written and read back, is the
// same RunResult; summaries written by earlier oomlab versions still read; a program run has its
// own fields, and an exec written the old way (scenario "exec") still reads as one.
#include <gtest/gtest.h>

#include <fstream>

#include "full_run_result.hpp"
#include "oomlab/error.hpp"
#include "reports/matrix/compare.hpp"
#include "reports/run/run_report.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/report_content.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
namespace fs = std::filesystem;
using testing::full_model;
using testing::full_program_run;
using testing::full_run;

RunResult round_trip(const RunResult& r, const fs::path& folder) {
  const nlohmann::json doc =
      nlohmann::json::parse(summary_json(r, {.argv = {"oomlab"}, .folder = folder}).dump());
  return read_summary(JsonFields(doc, "summary.json"), folder);
}

// Field by field, so that a failure names the field.
void expect_same(const RunResult& a, const RunResult& b) {
  EXPECT_EQ(a.environment.driver_version, b.environment.driver_version);
  EXPECT_EQ(a.environment.cuda_driver_api, b.environment.cuda_driver_api);
  EXPECT_EQ(a.environment.cuda_runtime, b.environment.cuda_runtime);
  EXPECT_EQ(a.environment.host, b.environment.host);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.simulated, b.simulated);
  EXPECT_EQ(a.scenario, b.scenario);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.allocator, b.allocator);
  EXPECT_EQ(a.budget_bytes, b.budget_bytes);
  EXPECT_EQ(a.ballast_bytes, b.ballast_bytes);
  EXPECT_EQ(a.cap_bytes, b.cap_bytes);
  EXPECT_EQ(a.notices, b.notices);
  EXPECT_EQ(a.outcome, b.outcome);
  EXPECT_EQ(a.error_message, b.error_message);
  EXPECT_EQ(a.events_error, b.events_error);
  EXPECT_EQ(a.last_events, b.last_events);
  ASSERT_EQ(a.oom.has_value(), b.oom.has_value());
  if (a.oom) {
    EXPECT_EQ(a.oom->diagnosis, b.oom->diagnosis);
    EXPECT_EQ(a.oom->cache, b.oom->cache);
    EXPECT_EQ(a.oom->largest_live, b.oom->largest_live);
    EXPECT_EQ(a.oom->program, b.oom->program);
    EXPECT_EQ(a.oom->remedies, b.oom->remedies);
    EXPECT_EQ(a.oom->leak, b.oom->leak);
    EXPECT_EQ(*a.oom, *b.oom);
  }
  EXPECT_EQ(a.peak_live_bytes, b.peak_live_bytes);
  EXPECT_EQ(a.peak_reserved_bytes, b.peak_reserved_bytes);
  EXPECT_EQ(a.allocations, b.allocations);
  EXPECT_EQ(a.frees, b.frees);
  EXPECT_EQ(a.failed, b.failed);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.verify, b.verify);
  EXPECT_EQ(a.integrity_checked, b.integrity_checked);
  EXPECT_EQ(a.integrity_corrupted, b.integrity_corrupted);
  EXPECT_EQ(a.integrity_corrupted_words, b.integrity_corrupted_words);
  EXPECT_EQ(a.notes, b.notes);
  EXPECT_EQ(a.trials, b.trials);
  EXPECT_EQ(a.metrics, b.metrics);
  EXPECT_EQ(a.duration_ms, b.duration_ms);
  EXPECT_EQ(a.cleanup, b.cleanup);
  EXPECT_EQ(a.program, b.program);
  EXPECT_EQ(a.models, b.models);
}

TEST(SummarySchema, AScenarioRunWithEveryFieldSetReadsBackTheSame) {
  const fs::path folder = "/runs/r1";
  const RunResult r = full_run();
  expect_same(r, round_trip(r, folder));
}

TEST(SummarySchema, AProgramRunWithEveryFieldSetReadsBackTheSame) {
  const fs::path folder = "/runs/r2";
  RunResult r = full_program_run(folder);
  ProgramModel other = full_model(folder);
  other.snapshot = "/elsewhere/snapshot-rank1.pickle";
  other.remedy_check.reset();
  other.advised.reset();
  r.models = {full_model(folder), other};
  const RunResult back = round_trip(r, folder);
  expect_same(r, back);
  ASSERT_TRUE(back.is_program());
}

TEST(SummarySchema, AProgramRunClaimsNoScenarioAllocatorOrScenarioPeak) {
  const RunResult r = full_program_run({});
  const nlohmann::ordered_json doc = summary_json(r, {});
  EXPECT_EQ(doc.at("kind"), "program");
  EXPECT_TRUE(doc.at("scenario").is_null());
  EXPECT_TRUE(doc.at("allocator").is_null());
  EXPECT_TRUE(doc.at("peak").is_null());
  EXPECT_EQ(doc.at("program").at("peak_bytes"), 3_GiB);
  EXPECT_EQ(doc.at("program").at("peak_used_bytes"), 3200_MiB);
  const nlohmann::ordered_json scenario = summary_json(full_run(), {});
  EXPECT_EQ(scenario.at("kind"), "scenario");
  EXPECT_EQ(scenario.at("scenario").at("name"), "replay");
}

// An exec summary as oomlab wrote it before a program run had its own fields: scenario and
// allocator "exec", the command a parameter, the program's bytes in "peak".
nlohmann::json old_exec_summary(const RunResult& r) {
  nlohmann::json doc = nlohmann::json::parse(summary_json(r, {}).dump());
  doc.erase("kind");
  doc["scenario"] = {
      {"name", "exec"}, {"params", {{"command", "python train.py --batch 64"}}}, {"seed", 0}};
  doc["allocator"] = {{"name", "exec"}, {"options", nlohmann::json::object()}};
  doc["peak"] = {{"live_bytes", r.program->peak_bytes},
                 {"reserved_bytes", r.program->peak_used_bytes}};
  doc["program"].erase("peak_used_bytes");
  return doc;
}

TEST(SummarySchema, AnExecWrittenTheOldWayReadsAsAProgramRun) {
  const RunResult r = full_program_run({});
  const nlohmann::json doc = old_exec_summary(r);
  const RunResult back = read_summary(JsonFields(doc, "summary.json"));
  ASSERT_TRUE(back.is_program());
  EXPECT_EQ(back.scenario, "");
  EXPECT_EQ(back.allocator, "");
  EXPECT_EQ(back.peak_live_bytes, 0U) << "the program's bytes are not a scenario's live bytes";
  EXPECT_EQ(back.program->peak_bytes, 3_GiB);
  EXPECT_EQ(back.program->peak_used_bytes, 3200_MiB) << "from the old peak.reserved_bytes";
  EXPECT_EQ(back.program->command, r.program->command);
}

TEST(SummarySchema, CompareAndTheReportReadAnExecOfEitherShapeAlike) {
  const RunResult r = full_program_run({});
  const std::string now = summary_json(r, {}).dump();
  const std::string before = old_exec_summary(r).dump();
  const CompareInput a = parse_compare_input(now, "now.json");
  const CompareInput b = parse_compare_input(before, "before.json");
  ASSERT_EQ(a.cells.size(), 1U);
  ASSERT_EQ(b.cells.size(), 1U);
  EXPECT_EQ(a.cells[0].key, b.cells[0].key) << "the same program matches across the change";
  EXPECT_EQ(a.cells[0].scenario, "exec");
  const nlohmann::json now_doc = nlohmann::json::parse(now);
  const nlohmann::json before_doc = nlohmann::json::parse(before);
  const RunReport x = read_run_summary(JsonFields(now_doc, "now.json"));
  const RunReport y = read_run_summary(JsonFields(before_doc, "before.json"));
  EXPECT_EQ(run_title(x), "exec: python train.py --batch 64");
  EXPECT_EQ(run_title(y), run_title(x));
  EXPECT_EQ(run_rows(x).front().label, "Program");
}

TEST(SummarySchema, RecordedSummariesOfEarlierVersionsStillRead) {
  const fs::path data = testing::test_data_dir();
  // Written before device_total_bytes, evidence, leak, events and cleanup existed.
  const nlohmann::json h100 =
      read_json_file(data / "compare" / "h100_run_growing-batch_async.json");
  const RunResult old = read_summary(JsonFields(h100, "h100.json"));
  EXPECT_EQ(old.scenario, "growing-batch");
  EXPECT_EQ(old.allocator, "async");
  EXPECT_EQ(old.outcome, Outcome::oom);
  ASSERT_TRUE(old.oom);
  EXPECT_EQ(old.oom->device_total_bytes, 0U) << "not recorded then";
  EXPECT_FALSE(old.oom->cache);
  EXPECT_FALSE(old.is_program());
  EXPECT_EQ(old.oom->live_bytes, h100["oom"]["live_bytes"].get<std::uint64_t>());
  EXPECT_EQ(to_string(old.oom->diagnosis.cause), h100["oom"]["cause"].get<std::string>());

  const RunReport report = load_run_report(data / "report" / "run_sim");
  EXPECT_EQ(report.scenario, "fragmentation");
  EXPECT_TRUE(report.simulated);
  ASSERT_TRUE(report.oom);
  EXPECT_FALSE(report.cleanup) << "the sim has no device to check";
}

TEST(SummarySchema, AMalformedTypedFieldNamesTheFileAndTheField) {
  nlohmann::json doc = nlohmann::json::parse(summary_json(full_run(), {}).dump());
  doc["oom"]["cause"] = "gremlins";
  try {
    (void)read_summary(JsonFields(doc, "runs/x/summary.json"));
    FAIL() << "an unknown cause was read";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::input);
    EXPECT_NE(std::string(e.what()).find("runs/x/summary.json: 'oom.cause' must be one of "
                                         "capacity, fragmentation, leak, external-pressure"),
              std::string::npos)
        << e.what();
  }
  doc["oom"]["cause"] = "leak";
  doc["kind"] = "film";
  EXPECT_THROW((void)read_summary(JsonFields(doc, "s.json")), Error);
}

}  // namespace
}  // namespace oomlab
