// PLACEHOLDER: implemented by the compare work in progress.
#include "cli/commands.hpp"
#include "oomlab/error.hpp"

namespace oomlab::cli {
int compare_command(const CompareOptions& /*options*/, std::ostream& /*out*/, std::ostream& err) {
  err << "oomlab: error: compare is not built yet\n";
  return kExitUsage;
}
}  // namespace oomlab::cli
