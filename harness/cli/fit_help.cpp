// The help footers of `oomlab fit` and `oomlab fit exec`.
#include "cli/help_text.hpp"

namespace oomlab::cli {

std::string fit_footer() {
  return "How it searches:\n"
         "  Fresh runs of the scenario with NAME at LO, then at values doubling from it (LO, "
         "2·LO,\n"
         "  4·LO ... up to HI) until one runs out of memory, then bisection between the last two:\n"
         "  about 2·log2(HI-LO) runs at most. The answer is the largest value that completes, "
         "with\n"
         "  its headroom (the peak at it against the budget) and what the value above it needed\n"
         "  (its OOM's request and cause). A run that ends in another error stops the search with\n"
         "  its message; --confirm N reruns the answer and the value above it, and a value above\n"
         "  it that then completes is reported as not monotonic, with both runs.\n"
         "Named cards:\n"
         "  --budget T4 (L4, A10G, RTX4090, A100-40GB, L40S, H100-80GB, A100-80GB, H200; H100\n"
         "  for H100-80GB): the card's total memory as NVML reports it, less what the driver "
         "keeps\n"
         "  back here when idle. An approximation of the card; oomlab list --cards gives each\n"
         "  figure's source. The answer names the cards of the table that hold its budget.\n"
         "Examples:\n"
         "  oomlab fit leak -a sim --budget 1GiB -p leak=8MiB --range steps=1..100000\n"
         "  oomlab fit leak -a sim --budget T4 -p leak=64MiB --range steps=1..10000 --json -\n"
         "  oomlab fit leak -a sim --budget 2GiB --range steps=1..1000 --confirm 2 --out runs/fit\n"
         "  oomlab fit replay --trace 'runs/snap_b{batch}.pickle' --from batch=1,2 --range "
         "batch=1..256 --budget 24GiB\n"
         "Exit codes: 0 an answer, 1 not even LO completes, a run failed for another reason, or\n"
         "the runs contradict each other, 2 bad usage or input, 3 no usable device for the\n"
         "allocator, 4 a trial passed --timeout (the search stops there), 5 an output file could\n"
         "not be written, 130 interrupted.";
}

std::string fit_exec_footer() {
  return "How it searches:\n"
         "  Each trial runs the command as oomlab exec does, a fresh process on a card cut down\n"
         "  to --budget, with {NAME} in its words replaced by the value (and OOMLAB_FIT_<NAME>,\n"
         "  NAME upper-cased, in its environment): LO, then values doubling from it until one "
         "runs\n"
         "  out of memory, then bisection. In-process finders (Lightning's BatchSizeFinder,\n"
         "  accelerate's find_executable_batch_size) try every value in one process, whose\n"
         "  earlier OOMs leave the next trial a fragmented cache; a fresh process does not. The\n"
         "  answer is the largest value that completes, its headroom (the program's peak against\n"
         "  the budget) and what the value above it needed (its OOM line's request and cause). A\n"
         "  program that fails for another reason (its own error) stops the search with its\n"
         "  message. Each trial prints its value, how it ended, its time and peak; the program's\n"
         "  output is not shown. --confirm N reruns the answer and the value above it N times.\n"
         "  --budget takes a card's name too (oomlab fit --help, oomlab list --cards).\n"
         "Examples:\n"
         "  oomlab fit exec --budget 24GiB --range batch=1..512 -- python train.py --batch "
         "{batch}\n"
         "  oomlab fit exec --budget L4 --range batch=8..256 --confirm 2 --out runs/fit -- "
         "python train.py --batch {batch}\n"
         "  oomlab fit exec --budget 8GiB --range batch=1..64 --gpus all --grid vae=,--vae-slicing "
         "--grid attn=,--attention-slicing -- python sd.py --batch {batch} {vae} {attn}\n"
         "Exit codes: 0 an answer, 1 not even LO completes, the program failed for another\n"
         "reason, or the runs contradict each other, 2 bad usage (no {NAME} in the command, a bad\n"
         "--range), 3 no usable CUDA device, 4 a trial passed --timeout, 5 an output file could\n"
         "not be written, 130 interrupted.";
}

}  // namespace oomlab::cli
