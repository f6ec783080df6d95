#include <iostream>

#include "cli/cli.hpp"
#include "cli/signals.hpp"

int main(int argc, char** argv) {
  oomlab::cli::die_with_matrix_parent();
  std::ios::sync_with_stdio(false);
  return oomlab::cli::run_cli(std::vector<std::string>(argv, argv + argc), std::cout, std::cerr);
}
