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

}  // namespace oomlab::training
