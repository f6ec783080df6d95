#include <CLI/CLI.hpp>

#include "cli/command_table.hpp"
#include "io/output_file.hpp"
#include "pytorch/face/face.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "pytorch/reports/whatif_report.hpp"
#include "record/formats.hpp"

namespace oomlab::torch {

using namespace oomlab::cli;  // the engine's cli types, which it works in

namespace {

std::string whatif_footer() {
  return "How to read it:\n"
         "  The first line is the answer: the setting that needs the least memory against native\n"
         "  (PyTorch's defaults) and, when a budget is known, which settings fit in it.\n"
         "  frontier   the smallest budget at which the replay completes (bisection to 2 MiB, on "
         "a\n"
         "             simulated 80 GiB card, or --budget when larger); 'over N': not even then\n"
         "  vs native  how much more or less that is than native's frontier\n"
         "  at BUDGET  'fits', or the snapshot entry whose request ran out of memory, and its "
         "cause\n"
         "  Rows: as recorded (the snapshot's own allocator_settings, when they differ from the\n"
         "  defaults), native, expandable_segments, max_split_size=128MiB and 512MiB,\n"
         "  garbage_collection_threshold=0.8 (under set_per_process_memory_fraction, the only "
         "place\n"
         "  PyTorch collects), backend=async (cudaMallocAsync). The budget is --budget, else what "
         "the\n"
         "  program had when its OOM found the device full; a run capped by\n"
         "  set_per_process_memory_fraction does not record its cap, so then only frontiers "
         "show.\n"
         "Examples:\n"
         "  oomlab whatif --trace memory_snapshot.pickle\n"
         "  oomlab whatif --trace memory_snapshot.pickle --budget 24GiB --out whatif/\n"
         "  oomlab whatif --trace 'runs/snap_b{batch}.pickle' --from batch=1,2 --at batch=16 "
         "--budget 24GiB\n"
         "Exit codes: 0 the table was made, 2 bad usage or a file that is not a PyTorch "
         "snapshot, 5 an\n"
         "output file could not be written, 130 interrupted.";
}

CommandRun define_whatif(CLI::App& w) {
  auto o = std::make_shared<WhatIfOptions>();
  w.add_option("--trace", o->trace,
               "the PyTorch memory snapshot (torch.cuda.memory._dump_snapshot(), pickle or JSON)")
      ->required();
  w.add_option("--budget,-b", o->budget,
               "the memory the program had: a size (24GiB, 1.5GB; a larger card is modelled when "
               "it is over 80 GiB), N% of the modelled card, or all; adds 'fits' or 'OOM at "
               "entry N' per setting (default: the snapshot's own, when its OOM found the device "
               "full)");
  w.add_option("--json", o->json,
               "also write oomlab.whatif.v1 JSON to FILE; '-' prints it alone on stdout and the "
               "table on stderr");
  w.add_option("--out,-o", o->out,
               "folder for whatif.json, report.html and report.md; not one that holds one");
  w.add_flag("--force", o->force, "--out may name a folder holding a what-if: replace it");
  w.add_option("--level", o->level, "what is replayed: tensor (the program's requests)")
      ->capture_default_str();
  w.add_option("--device,-d", o->device,
               "whose device trace in the snapshot (default: the one that holds a history)");
  w.add_option("--alloc-conf", o->alloc_conf,
               "a row of your own: PYTORCH_CUDA_ALLOC_CONF as your job sets it "
               "(\"expandable_segments:True,max_split_size_mb:128\")");
  w.add_flag("--fraction", o->fraction,
             "ask every row under torch.cuda.set_per_process_memory_fraction: the frontiers are "
             "the smallest caps on the modelled card, not the smallest cards");
  w.add_flag("--quiet,-q", o->quiet, "only the answer line");
  w.add_option("--from", o->from,
               "NAME=V1,V2[,...]: --trace is a pattern with {NAME} where each snapshot's value "
               "goes ('runs/snap_b{batch}.pickle'); the table is of the trace made from them at "
               "--at");
  w.add_option("--at", o->at, "NAME=N: with --from, the value the table is made for (batch=64)");
  w.footer(whatif_footer());
  return [o](const CommandCall& c) { return whatif_command(*o, c.out, c.err); };
}

// A whatif folder's report: whatif's own pages, as `whatif --out` wrote them.
std::vector<std::filesystem::path> write_whatif_reports(const std::filesystem::path& file,
                                                        const std::filesystem::path& out_dir) {
  const WhatIfResult whatif = read_whatif(file);
  write_output_file(out_dir / "report.html", whatif_html(whatif));
  write_output_file(out_dir / "report.md", whatif_markdown(whatif));
  return {out_dir / "report.html", out_dir / "report.md"};
}

}  // namespace

std::string pytorch_exec_help() {
  return "PyTorch snapshot, with no change to the program:\n"
         "  A start-up shim (a sitecustomize.py first on PYTHONPATH, which runs the one the\n"
         "  environment had) waits for the program to import torch; from its first use of CUDA\n"
         "  it records PyTorch's memory history (alloc/free and segment events) and writes\n"
         "  snapshot-rank<RANK>.pickle (LOCAL_RANK, else snapshot-pid<PID>.pickle) at each OOM "
         "and\n"
         "  at a normal exit; after an unhandled exception the OOM's snapshot is kept. The\n"
         "  program's output, exit code and exceptions are unchanged; a failure of the shim is\n"
         "  noted (program.snapshot_note), never raised. --no-snapshot turns it off,\n"
         "  --snapshot-stacks python adds each allocation's Python stack, --snapshot-entries N\n"
         "  keeps the last N entries only. Without a run folder (--no-out) nothing is kept.\n"
         "The model (PyTorch programs): each snapshot goes through oomlab's model of PyTorch's\n"
         "  allocator: summary.json 'model' says whether it fails where the program did, the\n"
         "  memory the process held outside the allocator, each setting at the budget with the\n"
         "  card it needs, and the setting to use; --check-remedy runs the program again with "
         "it.\n";
}

void add_pytorch_commands(CommandTable& table) {
  table.add({.name = "whatif",
             .summary = "would other PyTorch allocator settings have avoided the OOM? A snapshot "
                        "replayed on a model of PyTorch's caching allocator under each (no GPU "
                        "needed)",
             .place = 50,
             .define = &define_whatif});
  table.set_series_table(kBackendName, &card_table);
  table.add_report_kind({.file = "whatif.json",
                         .schema = std::string(kWhatIfSchema),
                         .name = "whatif",
                         .write = &write_whatif_reports});
}

}  // namespace oomlab::torch
