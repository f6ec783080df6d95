#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/help_text.hpp"
#include "exec/exec_run.hpp"
#include "exec/oom_message.hpp"
#include "oomlab/registry.hpp"

namespace oomlab::cli {

namespace {

// Each registered launcher's report, as the rank that ran out first is read from it.
std::string launcher_words() {
  std::string out;
  for (const Framework& f : Registry::global().frameworks()) {
    if (f.launcher) out += fmt::format("{}'s root cause and error file,", f.launcher->name);
  }
  return out;
}

// Whose OOM messages exec recognises (each registered dialect's reporters, highest rank first),
// as the help's lines: "  OOM messages recognised: PyTorch, ...", wrapped under 92 columns.
std::string dialect_lines() {
  std::vector<std::string> names;
  const auto add = [&names](const std::string& name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const OomDialect& d : oom_dialects()) {
    if (d.advice.empty()) add(d.name);
    for (const OomAdvice& a : d.advice)
      add(a.framework);
  }
  std::string out = "  OOM messages recognised:";
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string word = names[i] + (i + 1 < names.size() ? "," : ".");
    if (out.size() - line_start + 1 + word.size() > 92) {
      out += "\n ";
      line_start = out.size() - 2;
    }
    out += " " + word;
  }
  return out + "\n";
}

// What exec sets in every program's environment: its own and each framework's.
std::string environment_words() {
  std::vector<std::string> set;
  set.reserve(std::size(kMulticastOff));
  for (const auto& [name, value] : kMulticastOff)
    set.push_back(fmt::format("{}={}", name, value));
  for (const Framework& f : Registry::global().frameworks()) {
    for (const auto& [name, value] : f.program_environment)
      set.push_back(fmt::format("{}={}", name, value));
  }
  return fmt::format("{} are", fmt::join(set, ", "));
}

// What each framework's instrumentation and model add to a run (Framework::exec_help).
std::string frameworks_words() {
  std::string out;
  for (const Framework& f : Registry::global().frameworks())
    out += f.exec_help;
  return out;
}

}  // namespace

std::string exec_footer() {
  return "What the budget counts:\n"
         "  All the memory the program's processes may use on each device, their CUDA contexts\n"
         "  included: oomlab holds the rest of the free memory (a ballast, in its own process) "
         "for\n"
         "  the program's whole life, so the driver itself says out of memory where a card of "
         "that\n"
         "  size would. The program sees only the chosen devices (CUDA_VISIBLE_DEVICES).\n"
         "What is recorded (in the run folder):\n"
         "  events.csv  'sample' rows every --interval ms: live_bytes = the program's device "
         "memory\n"
         "              (NVML, its processes and their children), reserved_bytes = what the\n"
         "              device's free memory says it took from the budget, bytes = free memory;\n"
         "              an 'oom' row when its output reports an OOM\n"
         "  summary.json  outcome completed | oom | error | timeout | interrupted, the OOM line\n"
         "              and its figures, the cause, the peak; stdout.txt and stderr.txt\n"
         "  snapshot-*.pickle  a Python program's memory snapshot, one per process (below)\n" +
         dialect_lines() +
         "  A framework that sizes itself from the device's total memory is sized to the\n"
         "  budget's card where it says how (below), else named with the setting that fixes "
         "it.\n"
         "Several devices (--devices 0,1 or all; --budgets 0=20GiB,1=24GiB for each its own):\n"
         "  a ballast and a timeline per device (events-gpuN.csv), and for a distributed job the\n"
         "  rank that ran out of memory first: from the rank mark on its OOM line ([rank1]:,\n"
         "  [default1]:), the GPU the OOM message names, " +
         launcher_words() +
         "\n"
         "  and the device that filled its budget; summary.json program.failing_rank. A job left\n"
         "  waiting after a rank's OOM (no output, no device's memory moving for --grace s) is\n"
         "  ended, outcome oom. " +
         environment_words() +
         " set in every program's\n"
         "  environment.\n"
         "Safety: Ctrl-C sends SIGINT to the program's process group, --timeout SIGTERM, and "
         "after\n"
         "  --grace seconds SIGKILL; should oomlab itself be killed, a guardian process ends the\n"
         "  program's group and the driver frees oomlab's ballast. Free memory is checked "
         "after.\n" +
         frameworks_words() +
         "Examples:\n"
         "  oomlab exec --budget 24GiB -- python train.py --batch 64\n"
         "  oomlab exec --budget 16GiB --timeout 600 --out runs/train -- python train.py\n"
         "  oomlab exec --budget 8GiB --expect-no-oom --json - -- ./infer --model m.onnx\n"
         "  oomlab exec --budget 16GiB --check-remedy -- python train.py\n"
         "  oomlab report runs/train     # the timeline, the budget line, the OOM marked\n"
         "Exit codes: 0 the program ran (completed, or an OOM recorded), 1 --expect-oom or\n"
         "--expect-no-oom not met, the program failed for another reason, or --check-remedy's\n"
         "rerun still ran out of memory, 2 bad usage (no program, no such program), 3 no usable\n"
         "CUDA device, 4 --timeout passed, 5 an output file could not be written, 130 "
         "interrupted.";
}

std::string frontier_exec_footer() {
  return "How it searches:\n"
         "  One run at --budget (default: all free memory) must complete. From its snapshot\n"
         "  (the record of its framework's allocator: see oomlab exec --help) the model predicts\n"
         "  the whole process's frontier (its settings' frontier plus what the process held\n"
         "  outside the framework's allocator), and the search verifies it: the prediction\n"
         "  completes, one --resolution under it fails.\n"
         "  Without a snapshot, what the run took of the budget (plus the page the driver keeps)\n"
         "  is tried first. From that first probe, steps double away (1, 2, 4 ... resolutions)\n"
         "  until the answer changes, then bisection on fresh runs to --resolution: never a\n"
         "  bisection from zero. Each trial prints why it ran (top, prediction, probe, step,\n"
         "  bisection, confirm), its budget in exact bytes, the outcome, the time and the\n"
         "  program's OOM line; the program's output is not shown. --confirm N runs the\n"
         "  frontier and the budget under it N more times each and says how many completed:\n"
         "  programs are not always deterministic. Only the top run records a snapshot\n"
         "  (see oomlab exec --help); with --no-snapshot the search has no prediction.\n"
         "  --budget takes a card's name too (oomlab list --cards); the answer names the cards\n"
         "  that hold it.\n"
         "At a value not run (--from NAME=1,2 --at NAME=64, {NAME} in the command):\n"
         "  the program runs once at each --from value, at --budget, with a snapshot; the\n"
         "  snapshots are made into the trace at --at, whose frontier on the model under the\n"
         "  settings the runs had, plus what the process held outside the framework's\n"
         "  allocator, is the answer (predicted, not run). Where cuDNN's workspaces change with "
         "the value it\n"
         "  is a range: each workspace on its line, or given up when refused.\n"
         "Examples:\n"
         "  oomlab frontier exec -- python train.py --batch 64\n"
         "  oomlab frontier exec --from batch=1,2 --at batch=64 -- python train.py --batch "
         "{batch}\n"
         "  oomlab frontier exec --budget 40GiB --resolution 16MiB --confirm 3 --out runs/f -- "
         "./job\n"
         "Exit codes: 0 a frontier was found, 1 the program does not complete at --budget, 2 bad\n"
         "usage, 3 no usable CUDA device, 4 a trial passed --timeout (the search stops there),\n"
         "5 an output file could not be written, 130 interrupted.";
}

}  // namespace oomlab::cli
