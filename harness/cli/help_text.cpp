#include "cli/help_text.hpp"

namespace oomlab::cli {

std::string top_footer() {
  return "Examples:\n"
         "  oomlab run fragmentation --allocator=async --budget=8GiB\n"
         "  oomlab run fragmentation --allocator=sim --budget=1GiB --json -\n"
         "  oomlab run fragmentation -a async:release_threshold=max -p keep=1/4 -p block=1MiB\n"
         "  oomlab run replay --trace memory_snapshot.pickle --budget=24GiB\n"
         "  oomlab frontier replay --trace memory_snapshot.pickle\n"
         "  oomlab exec --budget 24GiB -- python train.py\n"
         "  oomlab frontier exec -- python train.py\n"
         "  oomlab whatif --trace memory_snapshot.pickle\n"
         "  oomlab matrix --scenarios=all --allocators=cuda,async,managed --out runs/nightly\n"
         "  oomlab report runs/nightly\n"
         "  oomlab compare ci/baselines/nvidia-h100-80gb-hbm3-580.json runs/nightly/matrix.json\n"
         "  oomlab list\n"
         "  oomlab info\n"
         "Each command's --help has its own examples and exit codes.\n"
         "Exit codes: 0 done (a provoked OOM is success), 1 a check failed, 2 bad usage or input,\n"
         "3 no usable device for the allocator, 4 a run or a matrix cell crashed or timed out,\n"
         "5 an output file could not be written (the result is still printed), 6 compare: "
         "baseline\n"
         "cells missing from the current run, 130 interrupted.";
}

std::string run_footer() {
  return "Examples:\n"
         "  oomlab run fragmentation -a sim --budget 1GiB\n"
         "  oomlab run growing-batch -a async --budget 24GiB --out runs/growing-batch\n"
         "  oomlab run replay --trace memory_snapshot.pickle --budget 24GiB --json -\n"
         "  oomlab run replay --trace memory_snapshot.pickle --alloc-conf "
         "expandable_segments:True --budget 9GiB\n"
         "  oomlab run leak -a sim --budget 1GiB -p steps=100 --repeat 20   # a soak: soak.json\n"
         "  oomlab run fragmentation -a async --budget 8GiB --expect-oom --junit oom.xml\n"
         "Exit codes: 0 done (a provoked OOM is success), 1 a check failed (--expect-oom or\n"
         "--expect-no-oom not met, corrupted data, memory left on the device, an error, a soak\n"
         "whose memory did not come back), 2 bad usage or input, 3 no usable device for the\n"
         "allocator, 4 the run passed --timeout, 5 an output file could not be written (the\n"
         "result is still printed, --json - too), 130 interrupted.\n";
}

std::string frontier_footer() {
  return "How to read it:\n"
         "  Each trial prints its budget in bytes (exact) and how the run ended; the last line is\n"
         "  the answer. A scenario that runs until it runs out of memory (fragmentation,\n"
         "  growing-batch, mixed-precision, leak with steps=0) fails at every budget: frontier is\n"
         "  for replay and for leak with -p steps=N.\n"
         "Examples:\n"
         "  oomlab frontier replay --trace memory_snapshot.pickle --budget 24GiB   # the "
         "smallest card, if 24 GiB or less\n"
         "  oomlab frontier replay --trace memory_snapshot.pickle --alloc-conf "
         "expandable_segments:True\n"
         "  oomlab frontier leak -a sim -p steps=100 -p leak=8MiB --budget 4GiB --out "
         "runs/frontier\n"
         "  oomlab frontier replay --trace rmm_log.csv -a sim --timeout 60 --junit frontier.xml\n"
         "Exit codes: 0 a frontier was found, 1 the run does not complete even at the largest "
         "budget,\n"
         "2 bad usage or input, 3 no usable device for the allocator, 4 a trial passed --timeout "
         "(the\n"
         "search stops there), 5 an output file could not be written, 130 interrupted.";
}

std::string matrix_footer() {
  return "Examples:\n"
         "  oomlab matrix --scenarios=all --allocators=cuda,async,managed --budget=8GiB --out "
         "runs/nightly\n"
         "  oomlab matrix -s fragmentation,leak -a sim --budget 512MiB --repeat 3 --out runs/m\n"
         "  oomlab matrix -s fragmentation,leak -a async,sim --repeat 5 --timeout 120\n"
         "Exit codes: 0 every cell ran (a provoked OOM is a cell that ran), 1 a cell could not "
         "run\n"
         "(it ended in error, e.g. no device for its allocator, or was stopped from outside), 2 "
         "bad\n"
         "usage, 4 a cell crashed or timed out, 5 matrix.json could not be written, 130 "
         "interrupted.";
}

std::string report_footer() {
  return "A run's report leads with its answer (a search's largest batch, a precision table, "
         "where a\n"
         "replayed program failed, an error and its last events, a soak's verdict), then the "
         "timeline.\n"
         "Examples:\n"
         "  oomlab report runs/growing-batch            # report.html and report.md beside "
         "summary.json\n"
         "  oomlab report runs/nightly --out site/nightly\n"
         "  oomlab report runs/a runs/b\n"
         "  oomlab report runs/frontier whatif/          # frontier.json, whatif.json: the answer "
         "first\n"
         "  oomlab report runs/fit                       # fit.json: the largest value, then the "
         "trials\n"
         "Exit codes: 0 the reports were written, 2 a path that is not a run, matrix, frontier, "
         "fit "
         "or\n"
         "whatif folder, 5 a report could not be written.";
}

std::string compare_footer() {
  return "Verdicts (cells match by scenario, allocator, options, params and budget):\n"
         "  same         the OOM point moved within --tolerance, or both completed\n"
         "  later-oom    the OOM comes later (more live bytes, or a later step)\n"
         "  fixed        the baseline failed (OOM, crash, timeout, error), the current completes\n"
         "  missing      in the baseline only (a cell that differs only in allocator options\n"
         "               shows them on both rows)\n"
         "  added        in the current run only, where it ran to its OOM or completed\n"
         "  Regressions (exit 1):\n"
         "  earlier-oom  the OOM comes earlier\n"
         "  new-oom      the baseline completed, the current runs out of memory\n"
         "  crash, timeout, error   the current cell crashed, timed out or ended in error\n"
         "  new-failure  in the current run only, where it crashed, timed out or ended in error\n"
         "Examples:\n"
         "  oomlab compare ci/baselines/nvidia-h100-80gb-hbm3-580.json runs/nightly/matrix.json\n"
         "  oomlab compare runs/before runs/after --tolerance 5% --markdown -\n"
         "  oomlab compare ci/baselines/nvidia-h100-80gb-hbm3-580.json runs/nightly --junit "
         "compare.xml\n"
         "  oomlab compare --fleet h100-570/matrix h100-580/matrix h200-580/matrix --markdown "
         "fleet.md\n"
         "  oomlab compare --pick-baseline ci/baselines nightly-out/info.json\n"
         "A parameter naming a file (a trace) matches by the file's content, not its path.\n"
         "--fleet: one row per cell, one column per environment (GPU, driver, CUDA, a program's\n"
         "framework versions), each compared with the previous version on the same GPU model;\n"
         "a program cell is its exec:NAME, so one NAME under two interpreters is one row.\n"
         "--pick-baseline: baseline=, own=, upgrade= and note= lines: this GPU and driver's\n"
         "baseline in DIR, else the same GPU's nearest older driver's (none: baseline= is empty).\n"
         "Exit codes: 0 no regression, 1 a regression, 2 bad usage or input, 5 an output file "
         "could\n"
         "not be written, 6 baseline cells missing from the current run, or nothing matched\n"
         "(--allow-missing: not an error).";
}

std::string list_footer() {
  return "Examples:\n"
         "  oomlab list\n"
         "  oomlab list --json\n"
         "  oomlab list --cards    # the named cards --budget takes, with their sources\n"
         "  oomlab list --plugin ./liboomlab_myscenarios.so\n"
         "Exit codes: 0 listed, 2 bad usage or a plugin that cannot be loaded.";
}

std::string info_footer() {
  return "Examples:\n"
         "  oomlab info\n"
         "  oomlab info --json\n"
         "Exit codes: 0 a CUDA device was found, 3 none (no driver, or no device).";
}

}  // namespace oomlab::cli
