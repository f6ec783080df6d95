#include "cli/help_text.hpp"

namespace oomlab::cli {

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
         "  OOM messages recognised: PyTorch, TensorFlow, JAX/XLA, CuPy, CUDA runtime and driver,\n"
         "  cuBLAS, cuDNN, CUDA.jl, RMM. A framework that sizes itself from the device's total\n"
         "  memory (JAX preallocates 75%) is named with the setting that fixes it.\n"
         "Safety: Ctrl-C sends SIGINT to the program's process group, --timeout SIGTERM, and "
         "after\n"
         "  --grace seconds SIGKILL; should oomlab itself be killed, a guardian process ends the\n"
         "  program's group and the driver frees oomlab's ballast. Free memory is checked after.\n"
         "Examples:\n"
         "  oomlab exec --budget 24GiB -- python train.py --batch 64\n"
         "  oomlab exec --budget 16GiB --timeout 600 --out runs/train -- python train.py\n"
         "  oomlab exec --budget 8GiB --expect-no-oom --json - -- ./infer --model m.onnx\n"
         "  oomlab report runs/train     # the timeline, the budget line, the OOM marked\n"
         "Exit codes: 0 the program ran (completed, or an OOM recorded), 1 --expect-oom or\n"
         "--expect-no-oom not met, or the program failed for another reason, 2 bad usage (no\n"
         "program, no such program), 3 no usable CUDA device, 4 --timeout passed, 5 an output "
         "file\n"
         "could not be written, 130 interrupted.";
}

std::string frontier_exec_footer() {
  return "How it searches:\n"
         "  One run at --budget (default: all free memory) must complete; what it took of the\n"
         "  budget (plus the page the driver keeps) is tried next, then up to three steps\n"
         "  doubling away from it, then bisection on fresh runs to --resolution. Each trial\n"
         "  prints its budget in exact bytes, the outcome, the time and the program's OOM line. "
         "The\n"
         "  program's output is not shown (its OOM line is). --confirm N runs the frontier and\n"
         "  the budget under it N more times each and says how many completed: programs are not\n"
         "  always deterministic.\n"
         "Examples:\n"
         "  oomlab frontier exec -- python train.py --batch 64\n"
         "  oomlab frontier exec --budget 40GiB --resolution 16MiB --confirm 3 --out runs/f -- "
         "./job\n"
         "Exit codes: 0 a frontier was found, 1 the program does not complete at --budget, 2 bad\n"
         "usage, 3 no usable CUDA device, 4 a trial passed --timeout (the search stops there),\n"
         "5 an output file could not be written, 130 interrupted.";
}

}  // namespace oomlab::cli
