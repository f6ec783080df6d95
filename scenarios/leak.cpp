// leak: a training loop whose working set is steady, yet which runs out of memory after hours,
// because every step keeps something alive by mistake:
//   loss-tensor  `losses.append(loss)` without `.item()`: the loss keeps its autograd graph;
//   cache        a dict of tensors that only grows (memoised features, a "just in case" cache);
//   grad-buffer  a gradient buffer made in backward and never released.
// Live bytes at step boundaries climb by the leak each step. oomlab fits that line, forecasts
// the step that will run out of memory from the first steps, and names the cause `leak`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

class Leak final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "leak"; }
  [[nodiscard]] std::string_view summary() const override {
    return "a steady training loop that keeps a little alive every step, until OOM: cause leak, "
           "forecast";
  }
  [[nodiscard]] std::string_view details() const override {
    return "Weights (weights= of the budget) stay for the whole run; every step allocates "
           "activations "
           "(working= of the budget, in `tensors` tensors) in forward order and frees them in "
           "reverse, and "
           "keeps `leak` bytes alive the way `kind` says: loss-tensor (after forward), cache (at "
           "the step's "
           "start) or grad-buffer (in backward). After forecast_after steps the run fits live "
           "bytes at step "
           "boundaries and forecasts the OOM step. Metrics: true_leak_bytes_per_step, "
           "leak_bytes_per_step "
           "(estimated), predicted_oom_step, actual_oom_step, forecast_error_steps.";
  }

  [[nodiscard]] ParamSpec params() const override {
    using namespace oomlab::literals;
    return {
        {.name = "leak",
         .type = ParamType::bytes,
         .default_value = Bytes{4_MiB},
         .help = "bytes each step keeps alive by mistake"},
        {.name = "kind",
         .type = ParamType::choice,
         .default_value = std::string("loss-tensor"),
         .help = "what is kept: the loss with its graph, a cache entry, or a gradient buffer",
         .choices = {"loss-tensor", "cache", "grad-buffer"}},
        {.name = "steps",
         .type = ParamType::integer,
         .default_value = std::int64_t{0},
         .help = "steps to run; 0 runs until OOM",
         .min_integer = 0},
        {.name = "weights",
         .type = ParamType::fraction,
         .default_value = Fraction{1, 4},
         .help = "share of the budget held by weights for the whole run"},
        {.name = "working",
         .type = ParamType::fraction,
         .default_value = Fraction{1, 4},
         .help = "share of the budget a step allocates and frees (activations)"},
        {.name = "tensors",
         .type = ParamType::integer,
         .default_value = std::int64_t{8},
         .help = "tensors the weights and the activations are each split into",
         .min_integer = 1},
        {.name = "forecast_after",
         .type = ParamType::integer,
         .default_value = std::int64_t{16},
         .help = "steps after which the OOM step is forecast",
         .min_integer = 4},
    };
  }

  void validate(const Params& p) const override {
    if (p.bytes("leak") == 0 && p.integer("steps") == 0) {
      throw_usage("leak: with leak=0 nothing grows, so steps must be set (steps=0 runs until OOM)");
    }
    if (p.fraction("weights").value() + p.fraction("working").value() >= 1.0) {
      throw_usage("leak: weights + working must leave room for the leak (their sum is 1 or more)");
    }
    if (p.integer("tensors") > 4096) throw_usage("leak: tensors must be at most 4096");
  }

  void run(RunContext& ctx) override {
    const Params& p = ctx.params();
    const std::uint64_t budget = ctx.budget_bytes();
    const auto tensors = static_cast<std::uint64_t>(p.integer("tensors"));
    ctx.phase("weights");
    std::vector<Block> weights =
        allocate_all(ctx, share(budget, p.fraction("weights")), tensors, "weights");
    if (weights.empty()) return;

    const auto steps = static_cast<std::uint64_t>(p.integer("steps"));
    const auto forecast_after = static_cast<std::uint64_t>(p.integer("forecast_after"));
    std::uint64_t excess = 0;  // the most a step adds on top of its starting live bytes
    std::optional<std::uint64_t> forecast;
    std::uint64_t step = 0;
    for (; steps == 0 || step < steps; ++step) {
      ctx.step(step);
      ctx.reset_peak();
      const std::uint64_t start = ctx.live_bytes();
      if (!one_step(ctx, p, share(budget, p.fraction("working")), tensors)) break;
      excess = std::max(excess, ctx.peak_live_bytes() - start);
      if (step + 1 == forecast_after)
        forecast = forecast_oom_step(ctx.leak_estimate(), budget, excess);
    }
    report(ctx, p, step, forecast);
  }

 private:
  static std::uint64_t share(std::uint64_t budget, Fraction f) {
    return round_down(budget / f.denominator * f.numerator, kDevicePageBytes);
  }

  // `total` in `count` tensors; empty at an OOM (what was allocated is the harness's to free).
  static std::vector<Block> allocate_all(RunContext& ctx, std::uint64_t total, std::uint64_t count,
                                         std::string_view label) {
    std::vector<Block> blocks;
    const std::uint64_t each = std::max<std::uint64_t>(total / count, 1);
    for (std::uint64_t i = 0; i < count; ++i) {
      Block b = ctx.allocate(each, label);
      if (!b) return {};
      blocks.push_back(b);
    }
    return blocks;
  }

  // Forward (activations in order), backward (freed in reverse), and the leak where `kind` puts it.
  bool one_step(RunContext& ctx, const Params& p, std::uint64_t working, std::uint64_t tensors) {
    const std::string& kind = p.choice("kind");
    const std::uint64_t leak = p.bytes("leak");
    if (kind == "cache" && !keep(ctx, leak, "cache entry")) return false;
    ctx.phase("forward");
    std::vector<Block> activations = allocate_all(ctx, working, tensors, "activation");
    if (activations.empty()) return false;
    if (kind == "loss-tensor" && !keep(ctx, leak, "loss kept with its graph")) return false;
    ctx.phase("backward");
    for (auto it = activations.rbegin(); it != activations.rend(); ++it) {
      ctx.release(*it);
      if (kind == "grad-buffer" && it == activations.rbegin() + static_cast<long>(tensors / 2) &&
          !keep(ctx, leak, "forgotten gradient buffer")) {
        return false;
      }
    }
    return true;
  }

  bool keep(RunContext& ctx, std::uint64_t bytes, std::string_view label) {
    if (bytes == 0) return true;
    Block b = ctx.allocate(bytes, label);
    if (!b) return false;
    kept_.push_back(b);  // never released: that is the leak
    return true;
  }

  // The first step k where the line's live bytes at the step start plus what a step adds pass
  // the budget: intercept + slope·k + excess > budget.
  static std::optional<std::uint64_t> forecast_oom_step(const LeakEstimate& e, std::uint64_t budget,
                                                        std::uint64_t excess) {
    if (e.bytes_per_step <= 0.0) return std::nullopt;
    const double room =
        static_cast<double>(budget) - static_cast<double>(excess) - e.intercept_bytes;
    return static_cast<std::uint64_t>(std::max(0.0, std::floor(room / e.bytes_per_step) + 1.0));
  }

  static void report(RunContext& ctx, const Params& p, std::uint64_t last_step,
                     std::optional<std::uint64_t> forecast) {
    const LeakEstimate estimate = ctx.leak_estimate();
    const bool ran_out = ctx.oom_recorded();
    ctx.metric("true_leak_bytes_per_step", static_cast<double>(p.bytes("leak")));
    ctx.metric("leak_bytes_per_step", estimate.bytes_per_step);
    ctx.metric("r_squared", estimate.r_squared);
    if (ran_out) ctx.metric("actual_oom_step", static_cast<double>(last_step));
    if (forecast) {
      ctx.metric("predicted_oom_step", static_cast<double>(*forecast));
      if (ran_out) {
        ctx.metric("forecast_error_steps",
                   static_cast<double>(last_step) - static_cast<double>(*forecast));
      }
    }
    ctx.note(fmt::format(
        "kept {} a step ({}); estimated {} a step from live bytes at step boundaries; OOM {} "
        "{}, forecast after {} steps: {}",
        format_bytes(p.bytes("leak")), p.choice("kind"),
        format_bytes(static_cast<std::uint64_t>(std::max(0.0, estimate.bytes_per_step))),
        ran_out ? "at step" : "not reached by step", last_step, p.integer("forecast_after"),
        forecast ? fmt::format("step {}", *forecast) : std::string("none")));
  }

  std::vector<Block> kept_;
};

OOMLAB_REGISTER_SCENARIO(Leak)

}  // namespace oomlab
