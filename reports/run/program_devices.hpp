// exec on several devices, in words: which device the headline speaks of (the failing rank's,
// else the one closest to its budget), each device against its own budget, and the order the
// model's answers are shown in (that device's snapshot first). On one device, none of it.
#pragma once

#include <string>
#include <vector>

#include "run/run_result.hpp"

namespace oomlab {

// The device a run on several speaks of first; nullptr on one device.
[[nodiscard]] const DeviceRun* headline_device(const ProgramRun& p);

// "GPU 1 (rank 1 ran out)", "GPU 1 (the closest to its budget)".
[[nodiscard]] std::string headline_device_label(const ProgramRun& p, const DeviceRun& d);

// "9.00 GiB on each of GPUs 0, 1", or "2.00 GiB on GPU 0, 3.00 GiB on GPU 1".
[[nodiscard]] std::string device_budgets_text(const ProgramRun& p);

// One device against its own budget: "budget 9.00 GiB · peak 8.50 GiB (94.4% of it) · 8.90 GiB
// of it taken · full at 3.21 s".
[[nodiscard]] std::string device_figures(const DeviceRun& d);

// "8.50 GiB (94.4% of its 9.00 GiB budget)".
[[nodiscard]] std::string peak_of_budget(std::uint64_t peak, std::uint64_t budget);

// The models in the order they are shown: the headline device's first, the others as they came.
[[nodiscard]] std::vector<const ProgramModel*> models_in_order(const RunResult& r);

// The models a report shows, in that order: on one device the first alone, on several each one.
[[nodiscard]] std::vector<const ProgramModel*> shown_models(const RunResult& r);

// "GPU 1: " for a model of a run on several devices, "" otherwise.
[[nodiscard]] std::string model_device_prefix(const RunResult& r, const ProgramModel& m);

}  // namespace oomlab
