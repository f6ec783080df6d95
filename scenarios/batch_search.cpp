#include "batch_search.hpp"

#include <fmt/format.h>

#include "oomlab/error.hpp"
#include "oomlab/units.hpp"

namespace oomlab::training {

namespace {

class Search {
 public:
  Search(RunContext& ctx, const Shape& shape, const SearchSettings& settings)
      : ctx_(ctx), shape_(shape), settings_(settings) {}

  bool trial(std::uint64_t batch) {
    ctx_.reset_peak();
    ++result_.trials;
    ctx_.expect_peak(page_model_peak(shape_, batch, settings_.steps, kDevicePageBytes));
    ctx_.begin_trial(fmt::format("{} batch {}", to_string(shape_.precision), batch));
    ContextSink sink(ctx_);
    TrainingRun run(shape_, batch, sink);
    bool ok = run.setup();
    for (std::uint64_t n = 0; ok && n < settings_.steps; ++n)
      ok = run.step(step_number_++);
    run.release();  // a clean state for the next trial
    ctx_.end_trial(ok);
    if (ok) peak_of_good_ = ctx_.peak_live_bytes();
    return ok;
  }

  SearchResult run() {
    std::uint64_t good = 0;
    std::uint64_t bad = 0;
    for (std::uint64_t batch = settings_.start; bad == 0;) {
      if (batch > settings_.limit) {
        result_.hit_limit = true;
        break;
      }
      if (trial(batch)) {
        good = batch;
        batch = settings_.doubling ? batch * 2 : batch + settings_.stride;
      } else {
        bad = batch;
      }
    }
    std::uint64_t bytes_at_good = good == 0 ? 0 : peak_of_good_;
    while (bad != 0 && bad - good > 1) {
      const std::uint64_t mid = good + (bad - good) / 2;
      if (trial(mid)) {
        good = mid;
        bytes_at_good = peak_of_good_;
      } else {
        bad = mid;
      }
    }
    if (bad != 0) {  // the boundary's OOM is the telling one: record it rather than the first
      ctx_.clear_oom();
      (void)trial(good + 1);
    }
    result_.max_batch = good;
    result_.bytes_at_max_batch = bytes_at_good;
    ctx_.expect_peak(0);
    return result_;
  }

 private:
  RunContext& ctx_;
  Shape shape_;
  SearchSettings settings_;
  SearchResult result_;
  std::uint64_t step_number_ = 0;
  std::uint64_t peak_of_good_ = 0;
};

}  // namespace

SearchResult find_max_batch(RunContext& ctx, const Shape& shape, const SearchSettings& settings) {
  return Search(ctx, shape, settings).run();
}

ParamSpec search_params() {
  return {
      {.name = "schedule",
       .type = ParamType::choice,
       .default_value = std::string("double"),
       .help = "how the batch grows until OOM: double, or linear by stride",
       .choices = {"double", "linear"}},
      {.name = "start",
       .type = ParamType::integer,
       .default_value = std::int64_t{1},
       .help = "the first batch tried",
       .min_integer = 1},
      {.name = "stride",
       .type = ParamType::integer,
       .default_value = std::int64_t{8},
       .help = "the step of a linear schedule",
       .min_integer = 1},
      {.name = "steps",
       .type = ParamType::integer,
       .default_value = std::int64_t{2},
       .help = "optimizer steps a trial (the optimizer's state appears at the first)",
       .min_integer = 1},
  };
}

SearchSettings search_settings(const Params& p) {
  return {.doubling = p.choice("schedule") == "double",
          .start = static_cast<std::uint64_t>(p.integer("start")),
          .stride = static_cast<std::uint64_t>(p.integer("stride")),
          .steps = static_cast<std::uint64_t>(p.integer("steps"))};
}

void validate_search(const Params& p) {
  const SearchSettings settings = search_settings(p);
  if (settings.start > settings.limit) {
    throw_usage(fmt::format("start = {} is above the search's limit ({}): no batch could be tried",
                            settings.start, settings.limit));
  }
}

PagePrediction predict_max_batch(const Shape& shape, const SearchSettings& settings,
                                 std::uint64_t budget) {
  PagePrediction prediction;
  prediction.analytic =
      largest_fitting([&](std::uint64_t b) { return analytic_peak(shape, b, settings.steps); },
                      budget, settings.limit);
  prediction.pages = largest_fitting(
      [&](std::uint64_t b) { return page_model_peak(shape, b, settings.steps, kDevicePageBytes); },
      round_down(budget, kDevicePageBytes), settings.limit);
  return prediction;
}

void note_page_gap(RunContext& ctx, const Shape& shape, const SearchSettings& settings,
                   std::uint64_t found, std::uint64_t analytic, std::string_view label) {
  if (found == analytic || analytic == 0) return;
  ctx.note(fmt::format(
      "{}max batch {} vs {} from the model's arithmetic: at batch {} the plan needs {} of live "
      "memory, and the allocator more ({} in 2 MiB pages, as the sim and cudaMalloc place it; "
      "budget {})",
      label, found, analytic, analytic,
      format_bytes(analytic_peak(shape, analytic, settings.steps)),
      format_bytes(page_model_peak(shape, analytic, settings.steps, kDevicePageBytes)),
      format_bytes(ctx.budget_bytes())));
}

}  // namespace oomlab::training
