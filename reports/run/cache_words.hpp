// The words of the framework whose allocator a record speaks of (oomlab/framework.hpp's
// CacheWords), with the engine's own where none is registered: the reports name no framework.
#pragma once

#include <cstdint>
#include <string>

#include "oomlab/caching_allocator.hpp"
#include "oomlab/framework.hpp"
#include "run/framework_model.hpp"

namespace oomlab {

// The words for a cache's state at an OOM (CacheState::framework).
[[nodiscard]] const CacheWords& words_of(const CacheState& cache);
// The words for exec's model of a program's snapshots (Framework::models_snapshots).
[[nodiscard]] const CacheWords& snapshot_words();
// Whose allocator a model of a program's snapshot is of ("PyTorch"), and the heading of its rows'
// settings (its settings variable; "What to set" where each row's settings are whole
// assignments): the model's own where it names its owner, else snapshot_words()'.
[[nodiscard]] std::string model_owner(const ProgramModel& model);
[[nodiscard]] std::string model_settings_heading(const ProgramModel& model);
// A size as the framework prints it (oomlab's own format where it has none).
[[nodiscard]] std::string size_in(const CacheWords& words, std::uint64_t bytes);

}  // namespace oomlab
