// The model's answers in an exec run's record: summary.json's `snapshots` and `model` (names other
// tools read), the human summary's lines, and the report's model block in HTML and Markdown from
// the same content, for an exec of the grow job that ran out of memory (its real snapshot and
// PyTorch's own message, tests/data/pytorch).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "exec/oom_message.hpp"
#include "oomlab/units.hpp"
#include "pytorch/exec/program_model.hpp"
#include "pytorch/exec/remedy_check.hpp"
#include "reports/run/program_summary.hpp"
#include "reports/run/run_report.hpp"
#include "reports/run/summary_json.hpp"
#include "reports/writers/html_report.hpp"
#include "reports/writers/junit.hpp"
#include "reports/writers/markdown_report.hpp"
#include "test_support.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kJobs = fs::path(testing::test_data_dir()) / "pytorch";

// PyTorch's message when grow ran out at entry 8,945 (captures.jsonl).
constexpr const char* kGrowOom =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total "
    "capacity of 79.18 GiB of which 75.69 GiB is free. Including non-PyTorch memory, this process "
    "has 3.48 GiB memory in use. 3.00 GiB allowed; Of the allocated memory 2.65 GiB is allocated "
    "by PyTorch, and 108.48 MiB is reserved by PyTorch but unallocated.";

class ModelRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = fs::temp_directory_path() / ("oomlab-model-record-" + std::to_string(::getpid()));
    fs::remove_all(folder_);
    fs::create_directories(folder_ / "snapshots");
    fs::copy_file(kJobs / "grow_cap3g_native.pickle", folder_ / "snapshots" / "pid-1234.pickle");
    const auto said = recognise_oom_line(kGrowOom);
    run_.scenario = "exec";
    run_.allocator = "exec";
    run_.params.set("command", std::string("python3 torch_job.py grow"));
    run_.budget_bytes = 3_GiB + *said->process_used_bytes - *said->framework_allocated_bytes -
                        *said->framework_cached_free_bytes;
    run_.outcome = Outcome::oom;
    run_.program = ProgramRun{.command = {"python3", "torch_job.py", "grow"},
                              .peak_bytes = *said->process_used_bytes,
                              .usage_source = "nvml-processes",
                              .snapshots = {folder_ / "snapshots" / "pid-1234.pickle"}};
    run_.oom = OomRecord{};
    run_.oom->request_bytes = *said->request_bytes;
    run_.oom->program =
        ProgramMessage{.framework = "PyTorch",
                       .line = said->line,
                       .process_used_bytes = said->process_used_bytes,
                       .framework_allocated_bytes = said->framework_allocated_bytes,
                       .framework_cached_free_bytes = said->framework_cached_free_bytes};
    model_program(run_, {});
    ASSERT_EQ(run_.models.size(), 1U);
    run_.models.front().remedy_check =
        RemedyCheck{.setting = "expandable_segments",
                    .settings = "expandable_segments:True",
                    .outcome = Outcome::oom,
                    .held = false,
                    .line = "torch.OutOfMemoryError: CUDA out of memory."};
    // As check_remedy leaves it: the framework words the whole check once.
    run_.models.front().remedy_check->summary =
        remedy_check_line(*run_.models.front().remedy_check);
  }
  void TearDown() override { fs::remove_all(folder_); }

  fs::path folder_;
  RunResult run_;
};

TEST_F(ModelRecord, SummaryJsonCarriesTheModelUnderItsFixedNames) {
  const nlohmann::ordered_json doc = summary_json(run_, {.argv = {"oomlab"}, .folder = folder_});
  const auto& m = doc.at("model");
  EXPECT_EQ(m.at("snapshot"), "snapshots/pid-1234.pickle");
  EXPECT_EQ(m.at("program_entry"), 8945);
  EXPECT_EQ(m.at("reproduced_entry"), 8945);
  EXPECT_EQ(m.at("reproduced"), true);
  EXPECT_EQ(m.at("outside_allocator_bytes"), run_.models.front().outside_allocator_bytes);
  EXPECT_EQ(m.at("lower_bound"), true);
  ASSERT_EQ(m.at("whatif").size(), 6U);
  for (const auto& row : m.at("whatif")) {
    for (const char* key : {"setting", "completes_at_budget", "frontier_bytes", "alloc_conf"})
      EXPECT_TRUE(row.contains(key)) << key;
  }
  EXPECT_EQ(m.at("whatif")[1].at("setting"), "expandable_segments");
  EXPECT_EQ(m.at("whatif")[1].at("alloc_conf"), "expandable_segments:True");
  const auto& check = m.at("remedy_check");
  EXPECT_EQ(check.at("setting"), "expandable_segments");
  EXPECT_EQ(check.at("alloc_conf"), "expandable_segments:True");
  EXPECT_EQ(check.at("outcome"), "oom");
  EXPECT_EQ(check.at("held"), false);
  EXPECT_TRUE(m.at("caveats").back().get<std::string>().find("lower bound") != std::string::npos);
}

TEST_F(ModelRecord, WithoutASnapshotTheModelIsNull) {
  run_.models.clear();
  run_.program->snapshots.clear();
  const nlohmann::ordered_json doc = summary_json(run_, {});
  EXPECT_TRUE(doc.at("model").is_null());
}

TEST_F(ModelRecord, TheHumanSummarySaysReproducedTheRowsAndTheCheck) {
  const std::string text = program_summary(run_, "");
  EXPECT_NE(text.find("model      reproduced: the model fails at entry 8,945, where PyTorch did"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("native (as it ran)"), std::string::npos) << text;
  EXPECT_NE(text.find("≥ "), std::string::npos) << "frontiers from a stopped trace are bounds";
  EXPECT_NE(text.find("the model's claim did not hold"), std::string::npos) << text;
  EXPECT_NE(text.find("advice     no setting of PyTorch's allocator completes"), std::string::npos)
      << text;
}

// A snapshot the model cannot read leaves no model: the summary's model line and summary.json
// say why (once a note no reader printed).
TEST_F(ModelRecord, ASnapshotTheModelCannotReadIsSaidOnTheModelLine) {
  std::ofstream(folder_ / "snapshots" / "pid-1234.pickle") << "not a pickle";
  model_program(run_, {});
  ASSERT_TRUE(run_.models.empty());
  ASSERT_EQ(run_.program->model_notes.size(), 1U);
  const std::string text = program_summary(run_, "");
  EXPECT_NE(text.find("model      none: the model skipped a snapshot it could not read: "),
            std::string::npos)
      << text;
  const nlohmann::ordered_json doc = summary_json(run_, {.argv = {"oomlab"}, .folder = folder_});
  ASSERT_EQ(doc.at("program").at("model_notes").size(), 1U) << doc.at("program").dump();
  EXPECT_EQ(doc.at("program").at("model_notes")[0], run_.program->model_notes.front());
  EXPECT_EQ(unread_words(*run_.program), " (" + run_.program->model_notes.front() + ")");
  model_program(run_, {});  // a remodel says it once
  EXPECT_EQ(run_.program->model_notes.size(), 1U);
}

TEST_F(ModelRecord, TheReportShowsTheModelBlockInHtmlAndMarkdownAlike) {
  std::ofstream(folder_ / "summary.json")
      << summary_json(run_, {.argv = {"oomlab"}, .folder = folder_}).dump(2);
  const RunReport report = load_run_report(folder_);
  ASSERT_FALSE(report.models.empty());
  EXPECT_EQ(report.models.front().program_entry, 8945U);
  EXPECT_EQ(report.models.front().whatif.size(), 6U);
  const std::string md = run_markdown(report);
  const std::string html = run_html(report);
  for (const std::string text :
       {"reproduced: the model fails at entry 8,945, where PyTorch did", "expandable_segments:True",
        "OOM at entry 8,945", "the model's claim did not hold", "lower bound"}) {
    EXPECT_NE(md.find(text), std::string::npos) << text;
    EXPECT_NE(html.find(xml_escape(text)), std::string::npos) << text;
  }
  EXPECT_NE(html.find("id=\"model-whatif\""), std::string::npos);
  EXPECT_NE(md.find("| Setting | PYTORCH_CUDA_ALLOC_CONF | At the budget |"), std::string::npos);
}

}  // namespace
}  // namespace oomlab
