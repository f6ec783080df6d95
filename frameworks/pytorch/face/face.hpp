// PyTorch's face on the command line: the `whatif` command (its flags, its help, its run) and what
// the wing adds to the CLI's table (Framework::add_commands), from above the CLI.
#pragma once

#include <ostream>
#include <string>

#include "oomlab/command_table.hpp"

namespace oomlab::torch {

// `oomlab whatif --trace SNAPSHOT`: the snapshot under several settings of PyTorch's allocator.
struct WhatIfOptions {
  std::string trace;
  std::string budget;  // empty: the snapshot's own, when it recorded one
  std::string json;    // FILE or '-'
  std::string out;     // folder for whatif.json, report.html and report.md
  bool force = false;  // --out may name a folder that holds a what-if
  std::string level = "tensor";
  std::string device;      // empty: the device trace that holds a history
  std::string alloc_conf;  // a row of the user's own settings, PyTorch's spelling
  bool fraction = false;   // every row under a memory fraction: caps, not cards
  bool quiet = false;
  std::string from;  // NAME=V1,V2: --trace is a pattern, the snapshots at these values
  std::string at;    // NAME=N: the value the table is made for
};

int whatif_command(const WhatIfOptions& options, std::ostream& out, std::ostream& err);

// `fit replay --from ... --cards`: the card table of PyTorch's settings (series_cards.cpp).
int card_table(const cli::SeriesTableCall& call);

// What exec does for a PyTorch program (its snapshot, the model), for `exec --help`.
[[nodiscard]] std::string pytorch_exec_help();

// PyTorch's commands and flags, into the CLI's table.
void add_pytorch_commands(cli::CommandTable& table);

}  // namespace oomlab::torch
