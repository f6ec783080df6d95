// The search both growing-batch and mixed-precision run: raise the batch until a training trial
// fails, bisect to the largest that fits, each trial from a clean state; then run the batch just
// past it once more, so that the run's recorded OOM is the one at the boundary.
#pragma once

#include <cstdint>
#include <map>

#include "oomlab/scenario.hpp"
#include "training_model.hpp"

namespace oomlab::training {

struct SearchSettings {
  bool doubling = true;  // else linear: start, start + stride, ...
  std::uint64_t start = 1;
  std::uint64_t stride = 1;
  std::uint64_t steps = 2;          // optimizer steps a trial (state appears at the first)
  std::uint64_t limit = 1U << 20U;  // no batch beyond this is tried
};

struct SearchResult {
  std::uint64_t max_batch = 0;           // 0: not even batch 1 fits
  std::uint64_t bytes_at_max_batch = 0;  // peak live bytes of that trial
  std::uint64_t trials = 0;
  bool hit_limit = false;  // no OOM up to SearchSettings::limit
};

// The plan's allocations through a run context: real blocks, written by kernels.
class ContextSink final : public Sink {
 public:
  explicit ContextSink(RunContext& ctx) : ctx_(ctx) {}
  bool alloc(Tensor& t) override {
    t.block = ctx_.allocate(t.bytes, t.name);
    return t.block.ok();
  }
  void free(Tensor& t) override { ctx_.release(t.block); }
  void cast(const Tensor& master, const Tensor& working, Precision p) override {
    ctx_.cast(master.block, working.block, p);
  }
  void phase(std::string_view name) override { ctx_.phase(name); }
  void step(std::uint64_t n) override { ctx_.step(n); }

 private:
  RunContext& ctx_;
};

[[nodiscard]] SearchResult find_max_batch(RunContext& ctx, const Shape& shape,
                                          const SearchSettings& settings);

// Settings from a scenario's schedule/start/stride/steps parameters.
[[nodiscard]] ParamSpec search_params();
[[nodiscard]] SearchSettings search_settings(const Params& params);
// Usage errors in those parameters (start beyond the search's limit).
void validate_search(const Params& params);

// The largest batch the plan fits in `budget` before anything runs: by its arithmetic alone, and
// in the 2 MiB pages cudaMalloc and the sim hand out.
struct PagePrediction {
  std::uint64_t analytic = 0;
  std::uint64_t pages = 0;
};
[[nodiscard]] PagePrediction predict_max_batch(const Shape& shape, const SearchSettings& settings,
                                               std::uint64_t budget);
// A note where the search found a batch other than the arithmetic's: by how much the pages take
// the difference. `label` starts the note ("fp16: "), empty for one precision.
void note_page_gap(RunContext& ctx, const Shape& shape, const SearchSettings& settings,
                   std::uint64_t found, std::uint64_t analytic, std::string_view label);

}  // namespace oomlab::training
