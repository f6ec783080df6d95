#include <malloc.h>

#include <iostream>

#include "cli/cli.hpp"
#include "cli/signals.hpp"

int main(int argc, char** argv) {
  // Blocks of 256 KiB and more (event chunks, trace columns) get mappings of their own, given
  // back when freed. glibc's sliding threshold would instead keep them in its arenas after the
  // first free, and a soak (--repeat) would read what it kept as growth in a later cycle.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);  // NOLINT(concurrency-mt-unsafe): before any thread
  oomlab::cli::die_with_matrix_parent();
  std::ios::sync_with_stdio(false);
  return oomlab::cli::run_cli(std::vector<std::string>(argv, argv + argc), std::cout, std::cerr);
}
