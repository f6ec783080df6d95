// The names of the formats oomlab writes (docs/outputs.md): one constant each, for
// the writers and the readers alike.
#pragma once

#include <string_view>

namespace oomlab {

inline constexpr std::string_view kRunSchema = "oomlab.run.v1";            // summary.json
inline constexpr std::string_view kMatrixSchema = "oomlab.matrix.v1";      // matrix.json
inline constexpr std::string_view kCompareSchema = "oomlab.compare.v1";    // compare --json
inline constexpr std::string_view kFleetSchema = "oomlab.fleet.v1";        // compare --fleet --json
inline constexpr std::string_view kFrontierSchema = "oomlab.frontier.v1";  // frontier --json
inline constexpr std::string_view kSoakSchema = "oomlab.soak.v1";          // soak.json
inline constexpr std::string_view kWhatIfSchema = "oomlab.whatif.v1";      // whatif --json
inline constexpr std::string_view kFitSchema = "oomlab.fit.v1";            // fit --json
inline constexpr std::string_view kFitGridSchema = "oomlab.fit-grid.v1";   // fit exec --grid

// The first line of events.csv.
inline constexpr std::string_view kEventsCsvHeader =
    "seq,t_ns,step,phase,op,bytes,ptr,stream,thread,status,live_bytes,reserved_bytes";

}  // namespace oomlab
