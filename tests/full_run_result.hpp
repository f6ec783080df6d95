// A RunResult with every field summary.json holds set to a value other than its default, for the
// schema's round-trip and compatibility tests.
#pragma once

#include <filesystem>

#include "run/run_result.hpp"

namespace oomlab::testing {

using namespace oomlab::literals;

inline SettingAnswer answer(std::string setting, std::string settings, bool completes,
                            std::optional<std::uint64_t> first_failure = std::nullopt) {
  SettingAnswer a;
  a.setting = std::move(setting);
  a.settings = std::move(settings);
  a.completes_at_budget = completes;
  a.first_failure_index = first_failure;
  return a;
}

inline OomRecord full_oom() {
  return {.event = 1033,
          .step = 7,
          .phase = "forward",
          .t_ms = 12.5,
          .request_bytes = 256_MiB,
          .request_label = "activations",
          .live_bytes = 1_GiB,
          .live_count = 42,
          .reserved_bytes = 1536_MiB,
          .allocator_used_bytes = 1100_MiB,
          .device_free_bytes = 100_MiB,
          .device_total_bytes = 80_GiB,
          .largest_free_bytes = 64_MiB,
          .diagnosis = {.cause = Cause::fragmentation,
                        .free_bytes = 512_MiB,
                        .fragmentation = 0.875,
                        .external_bytes = 3_MiB,
                        .footprint_bytes = 1300_MiB,
                        .evidence = "512 MiB free, the largest block 64 MiB",
                        .advice = "expandable_segments:True"},
          .cache = CacheState{.framework = "pytorch",
                              .allocated_bytes = 1_GiB,
                              .reserved_bytes = 1536_MiB,
                              .failed_device_bytes = 258_MiB,
                              .failed_request_bytes = 257_MiB,
                              .allowed_bytes = 2_GiB,
                              .pool = false},
          .trace_entry = 16794,
          .trace_line = 16801,
          .frames = {"forward (model.py:12)", "<module> (train.py:3)"},
          .frames_from = "snapshot",
          .user_frame = "<module> (train.py:3)",
          .user_line = "loss = model(x)",
          .largest_live = {{.bytes = 128_MiB, .trace_index = 9, .frames = {"f (a.py:1)"}}},
          .holders = {{.where = "forward (model.py)", .bytes = 96_MiB, .blocks = 3}},
          .program = ProgramMessage{.framework = "PyTorch",
                                    .line = "torch.OutOfMemoryError: CUDA out of memory.",
                                    .process_used_bytes = 1900_MiB,
                                    .framework_allocated_bytes = 1_GiB,
                                    .framework_cached_free_bytes = 100_MiB,
                                    .device_free_bytes = 100_MiB,
                                    .sizing_setting = "XLA_PYTHON_CLIENT_MEM_FRACTION",
                                    .lines_seen = 2},
          .remedies = {answer("expandable_segments", "expandable_segments:True", true),
                       answer("native", "", false, 8945)},
          .source = "driver",
          .error = "cudaErrorMemoryAllocation",
          .leak = {.samples = 5,
                   .bytes_per_step = 1.5e6,
                   .intercept_bytes = 2.5e8,
                   .r_squared = 0.97,
                   .detected = true,
                   .predicted_oom_step = 88.5}};
}

inline ProgramModel full_model(const std::filesystem::path& folder) {
  ProgramModel m{.snapshot = folder / "snapshot-rank0.pickle",
                 .device = 1,
                 .program_entry = 8945,
                 .reproduced_entry = 8945,
                 .outside_allocator_bytes = 500_MiB,
                 .process_bytes = 1900_MiB,
                 .allocator_reserved_bytes = 1400_MiB,
                 .outside_measured = "NVML at the OOM",
                 .budget_bytes = 1548_MiB,
                 .reproduction = "reproduced: the model fails at entry 8,945, where PyTorch did",
                 .advice = "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
                 .advised = 1,
                 .lower_bound = true,
                 .caveats = {"the trace stops at the OOM"},
                 .notes = {"one note"},
                 .duration_ms = 321.5};
  ModelRow native;
  native.setting = "native";
  native.first_failure_index = 8945;
  native.as_ran = true;
  ModelRow expandable;
  expandable.setting = "expandable_segments";
  expandable.settings = "expandable_segments:True";
  expandable.completes_at_budget = true;
  expandable.fraction_cap = true;
  expandable.approximate = true;
  expandable.model_frontier_bytes = 1200_MiB;
  expandable.frontier_bytes = 1800_MiB;
  m.whatif = {native, expandable};
  m.remedy_check = RemedyCheck{.setting = "expandable_segments",
                               .settings = "expandable_segments:True",
                               .replaced = "max_split_size_mb:128",
                               .allocator_cap_bytes = 1300_MiB,
                               .memory_fraction = 0.25,
                               .outcome = Outcome::oom,
                               .held = false,
                               .line = "torch.OutOfMemoryError",
                               .duration_ms = 900.25};
  m.library_oom = LibraryOom{
      .library = "cuBLAS", .entry = 4321, .allocated_bytes = 1100_MiB, .cached_free_bytes = 12_MiB};
  return m;
}

inline ProgramRun full_program(const std::filesystem::path& folder) {
  return {.command = {"python", "train.py", "--batch", "64"},
          .devices = {0, 1},
          .exit_code = 1,
          .signal = 9,
          .killed = true,
          .leftovers_ended = 2,
          .peak_bytes = 3_GiB,
          .peak_used_bytes = 3200_MiB,
          .first_bytes = 500_MiB,
          .usage_source = "nvml-processes",
          .samples = 400,
          .interval_ms = 2.5,
          .last_lines = {"epoch 1", "Traceback"},
          .oom_lines = 3,
          .stdout_file = "stdout.txt",
          .stderr_file = "stderr.txt",
          .snapshots = {folder / "snapshot-rank0.pickle", "/elsewhere/snapshot-rank1.pickle"},
          .snapshot_note = "one rank never imported torch",
          .device_runs = {{.index = 0,
                           .uuid = "GPU-0",
                           .budget_bytes = 2_GiB,
                           .ballast_bytes = 78_GiB,
                           .peak_bytes = 1_GiB,
                           .peak_used_bytes = 1100_MiB,
                           .first_bytes = 400_MiB,
                           .full_ms = 1234.5,
                           .events_file = "events-gpu0.csv"},
                          {.index = 1, .uuid = "GPU-1", .budget_bytes = 3_GiB}},
          .ranks = {{.rank = 0,
                     .local_rank = 0,
                     .device = 0,
                     .ran_out = false,
                     .last_lines = {"waiting"},
                     .memory_rose_after_oom = false},
                    {.rank = 1, .device = 1, .ran_out = true, .oom_ms = 3210.0}},
          .failing_rank = FailingRank{.rank = 1,
                                      .local_rank = 1,
                                      .device = 1,
                                      .t_ms = 3210.0,
                                      .evidence = {"its OOM line", "torchrun"},
                                      .waiting = {0},
                                      .verdict = "rank 1 (GPU 1) ran out of memory at 3.21 s"},
          .waiting_ended_after_s = 30.0};
}

// Every field the schema holds set to a value other than its default.
inline RunResult full_run() {
  RunResult r;
  r.environment.driver_version = "580.159.04";
  r.environment.cuda_driver_api = 13000;
  r.environment.cuda_runtime = 12090;
  r.environment.host = "gpu-h100-07";
  r.device = DeviceFacts{.index = 1,
                         .name = "NVIDIA H100 80GB HBM3",
                         .uuid = "GPU-8c2d",
                         .compute_capability = "9.0",
                         .pci_bus_id = "00000000:19:00.0",
                         .total_bytes = 80_GiB,
                         .free_bytes = 79_GiB,
                         .nvml_total_bytes = 81_GiB,
                         .multiprocessors = 132,
                         .memory_pools = true,
                         .managed_memory = true,
                         .concurrent_managed_access = true,
                         .vmm_granularity = 2_MiB};
  r.scenario = "replay";
  r.seed = 7;
  r.allocator = "torch";
  r.budget_bytes = 2_GiB;
  r.ballast_bytes = 78_GiB;
  r.cap_bytes = 2_GiB;
  r.notices = {"a notice"};
  r.outcome = Outcome::oom;
  r.error_message = "an error";
  r.events_error = "disk full";
  r.last_events = {{.seq = 5,
                    .op = "alloc",
                    .bytes = 1_MiB,
                    .status = "ok",
                    .phase = "p",
                    .step = 2,
                    .live_bytes = 3_MiB}};
  r.oom = full_oom();
  r.peak_live_bytes = 1_GiB;
  r.peak_reserved_bytes = 1536_MiB;
  r.allocations = 100;
  r.frees = 60;
  r.failed = 1;
  r.events = 162;
  r.verify = VerifyMode::sample;
  r.integrity_checked = 10;
  r.integrity_corrupted = 1;
  r.integrity_corrupted_words = 4;
  r.notes = {"a finding"};
  r.trials = {{.label = "fp32 batch 24", .first_event = 1, .last_event = 80, .fitted = true}};
  r.metrics = {{"max_batch", 23.0}, {"ratio_fp16", 1.75}};  // by name: read back in that order
  r.duration_ms = 456.75;
  r.cleanup = Cleanup{.device_free_before = 79_GiB,
                      .device_free_after = 79_GiB - 2_MiB,
                      .other_processes = 2,
                      .not_counted = "2 other processes on the device"};
  return r;
}

// The same as a program run (exec): no scenario, allocator or scenario peak.
inline RunResult full_program_run(const std::filesystem::path& folder) {
  RunResult r = full_run();
  r.scenario.clear();
  r.seed = 0;
  r.allocator.clear();
  r.peak_live_bytes = 0;
  r.peak_reserved_bytes = 0;
  r.program = full_program(folder);
  return r;
}

}  // namespace oomlab::testing
