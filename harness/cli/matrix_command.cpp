// PLACEHOLDER: matrix in progress.
#include "cli/commands.hpp"

namespace oomlab::cli {
int matrix_command(const MatrixOptions& /*options*/, const std::vector<std::string>& /*argv*/, std::ostream& /*out*/,
                   std::ostream& err) {
  err << "oomlab: error: matrix is not built yet\n";
  return kExitUsage;
}
}  // namespace oomlab::cli
