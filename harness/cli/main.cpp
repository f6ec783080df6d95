#include <iostream>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return oomlab::cli::run_cli(std::vector<std::string>(argv, argv + argc), std::cout, std::cerr);
}
