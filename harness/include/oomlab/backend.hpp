// An allocator backend as the registry holds it: its name, options and factory. The built-in
// backends (cuda, async, managed, sim, auto) are registered by the engine, a framework's model of
// its own allocator by the framework (Framework::add_backends), and a plugin's by its
// oomlab_register() (Registry::add_backend): a run builds each the same way, through its factory.
// Below the CLI a backend is its BackendKind, never its name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "oomlab/allocator.hpp"
#include "oomlab/params.hpp"
#include "oomlab/recorded_settings.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

struct RunConfig;  // run/runner.hpp: a run, typed
struct RunResult;  // run/run_result.hpp: what it produced

// The built-in backends have names here; a registered one gets a number from
// kFirstRegisteredBackend on, in the order it was added (Registry::add_backend).
enum class BackendKind : std::uint8_t {
  cuda,
  async,
  managed,
  sim,
  registered = 254,  // BackendInfo::kind of a backend still to be given its number
  automatic = 255,
};
inline constexpr std::uint8_t kFirstRegisteredBackend = 16;

// Bytes from low to high, both included.
struct ByteRange {
  std::uint64_t low_bytes = 0;
  std::uint64_t high_bytes = 0;
  bool operator==(const ByteRange&) const = default;
};

// Where a backend is built: the budget it serves, and on a device the device and the run's stream.
struct BackendSite {
  std::uint64_t budget_bytes = 0;
  std::optional<int> device;  // none: a simulated run
  Stream stream;
  // The settings of the allocator the run's input was recorded with (a snapshot's), as the
  // options of the backend that models it; null when the input recorded none.
  const RecordedSettings* recorded = nullptr;
};

struct BackendInfo {
  BackendKind kind = BackendKind::registered;  // the registry sets a registered one's
  std::string name;
  std::string summary;
  ParamSpec options;
  bool needs_device = true;    // with its default options (an adaptor's: its upstream's)
  bool holds_ballast = false;  // the driver enforces the budget; else oomlab caps it
  // The smallest piece it takes its memory in (an adaptor: its upstream's): the resolution of a
  // frontier found on it, and what "largest free under N" of its OOM means. CUDA's page where the
  // driver (or the sim standing for it) hands the memory out.
  std::uint64_t granularity_bytes = kDevicePageBytes;
  // Who refuses when it runs out (an adaptor: its upstream): "driver" where the device or the sim
  // does; a model that refuses at a limit of its own names itself, so that its OOM is never
  // called the driver's.
  std::string oom_source = "driver";
  // Whether what it hands out is held from its memory at once (reserved); false where pages land
  // only when touched (managed memory).
  bool reserves_on_allocate = true;
  // Its options that change how it holds memory, each as --allocator spells it after "NAME:"
  // ("expandable_segments=true", "upstream=cuda,backend=async"): the allocator contract suite
  // (tests/contract/) runs it with its defaults and with each of these.
  std::vector<std::string> contract_options;
  // Can hand an adaptor backend the memory it serves from: an allocation of any size, on the
  // run's stream. Every backend but an adaptor and auto.
  bool serves_upstream = false;
  void (*validate)(const Params&) = nullptr;  // checks across options; throws Error(usage)
  // Checks the options against the card a user's own run is given (`run --budget SIZE`); throws
  // Error(usage). Not a search's trials: a budget under what the options need just fails there.
  void (*validate_card)(const Params& options, std::uint64_t card_bytes) = nullptr;
  // Builds it (null for auto, which is resolved before anything is built). A device backend
  // throws Error(no_device) in a build without CUDA.
  std::unique_ptr<Allocator> (*make)(const Params& options, const BackendSite& site) = nullptr;
  // An adaptor's: the backend its options name as its upstream, where its memory comes from
  // (null: the backend takes its memory itself).
  BackendKind (*upstream)(const Params& options) = nullptr;
  // Takes the defaults of options the user left alone from the recorded settings (its own
  // options, by name), saying so in the notes it returns (null: the backend takes nothing from
  // them).
  std::vector<std::string> (*settle)(Params& options, const RecordedSettings* recorded) = nullptr;
  // Where the real allocator's frontier lies when the backend's is approximate (a model of a
  // pool the driver manages): [low, high] around the frontier the backend found with these
  // options; none when it is exact (null: always exact).
  std::optional<ByteRange> (*frontier_range)(const Params& options,
                                             std::uint64_t frontier_bytes) = nullptr;
  // A model of the allocator a trace records (a framework's, with its settings): `auto` replays
  // such a trace through it. What auto's summary names it for ("a PyTorch snapshot (replay
  // --trace)"), and the notice a run that took it for auto prints; both empty for the others.
  std::string replays;
  std::string auto_notice;
  // A model of a framework's allocator whose settings are a user's remedy: after a run of it ran
  // out of memory, its settings are tried at the same budget so that its advice names only one
  // that completes (RunResult's oom remedies); null: none to try.
  void (*check_settings)(const RunConfig& config, RunResult& result) = nullptr;
  // Its options as the framework's user would set them, for an answer's line (" with
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"); null: nothing said of them.
  std::string (*settings_words)(const Params& options) = nullptr;
  // An approximate frontier (frontier_range) in words: why, and where the real one lies.
  std::string (*approximate_words)(const Params& options, ByteRange range) = nullptr;
};

}  // namespace oomlab
