// PLACEHOLDER: implemented by the report work in progress.
#include "cli/commands.hpp"
#include "oomlab/error.hpp"

namespace oomlab::cli {
int report_command(const ReportOptions& /*options*/, std::ostream& /*out*/, std::ostream& err) {
  err << "oomlab: error: report is not built yet\n";
  return kExitUsage;
}
}  // namespace oomlab::cli
