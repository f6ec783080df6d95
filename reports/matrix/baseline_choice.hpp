// The nightly's baseline for a GPU model and driver: its own (ci/baselines/<gpu>-<driver
// major>.json) where there is one; else, on the night of a driver upgrade, the same GPU model's
// nearest older driver's, so that the upgrade is compared rather than written as a new baseline.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace oomlab {

struct BaselineChoice {
  std::string gpu;     // the GPU model ("NVIDIA H100 80GB HBM3"; "" without a device)
  std::string driver;  // this runner's driver ("580.159.04"; "" without one)
  // The file this GPU model and driver family's baseline is (to be) written as.
  std::filesystem::path own;
  std::optional<std::filesystem::path> chosen;  // none: nothing at or below this driver
  std::string chosen_driver;                    // the driver the chosen baseline was recorded under
  [[nodiscard]] bool upgrade() const { return chosen && *chosen != own; }
};

// The GPU model and driver a runner has, as a file of it records them.
struct RunnerIdentity {
  std::string gpu;     // "" without a device
  std::string driver;  // "" without one
};

// From `oomlab info --json` (the first device), or the environment of a summary.json or
// matrix.json (or a folder holding one). Throws Error(input) naming the file and what is wrong.
[[nodiscard]] RunnerIdentity read_runner_identity(const std::filesystem::path& file);

// "nvidia-h100-80gb-hbm3": lower case, every run of other characters one '-', none at the ends;
// "no-gpu" for "".
[[nodiscard]] std::string baseline_stem(const std::string& gpu);

// Looks in `folder` for `<stem>-<major>.json` files (a folder that does not exist holds none).
// Each candidate's driver is its environment.driver (else the major of its name); the nearest
// older one is the greatest version below `driver`. Throws Error(input) naming a candidate
// that is not an oomlab result.
[[nodiscard]] BaselineChoice choose_baseline(const std::filesystem::path& folder,
                                             const std::string& gpu, const std::string& driver);

// One line for the night's log and job summary: "baseline: FILE (driver 570.86.15 →
// 580.159.04: no baseline for driver 580 yet, compared with the nearest older driver's)".
[[nodiscard]] std::string baseline_choice_note(const BaselineChoice& choice);

}  // namespace oomlab
