// growing-batch: "what is the largest batch that fits?", answered the way people answer it,
// by trying. A transformer trains a couple of steps at batch 1, 2, 4, ... until one runs out of
// memory, then the search bisects to the exact largest batch that fits, each trial from a clean
// state. The model predicts the same answer from its arithmetic alone (analytic_max_batch); on
// the sim the two agree, and where its 2 MiB pages make them differ, the run says by how much.
#include <fmt/format.h>

#include "batch_search.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "training_model.hpp"

namespace oomlab {

class GrowingBatch final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "growing-batch"; }
  [[nodiscard]] std::string_view summary() const override {
    return "train at batch 1, 2, 4... until OOM, then bisect to the largest batch that fits";
  }
  [[nodiscard]] std::string_view details() const override {
    return "Each trial allocates what a transformer training step allocates, in order: fp32 "
           "weights, "
           "per-layer activations in forward order, freed in reverse in backward while fp32 "
           "gradients "
           "appear, optimizer state at the first step, the optimizer's temporaries (sizes: "
           "Korthikanti "
           "et al. 2022). The batch doubles (schedule=double) or grows by stride (linear) until a "
           "trial "
           "fails, then bisection finds the largest that fits; the recorded OOM is the one just "
           "past "
           "it. Metrics: max_batch, bytes_at_max_batch, analytic_max_batch (from the model's "
           "arithmetic), "
           "page_model_max_batch (the same plan in 2 MiB pages: the sim's exact answer), trials.";
  }

  [[nodiscard]] ParamSpec params() const override {
    ParamSpec spec = training::model_params(true);
    for (ParamDef& def : training::search_params())
      spec.push_back(std::move(def));
    return spec;
  }

  void validate(const Params& p) const override {
    training::validate_shape(p);
    training::validate_search(p);
  }

  void run(RunContext& ctx) override {
    const Params& p = ctx.params();
    const training::Shape shape = training::shape_from(p);
    const training::SearchSettings settings = training::search_settings(p);
    report_prediction(ctx, shape, settings, static_cast<std::uint64_t>(p.integer("batch")));

    const training::SearchResult found = training::find_max_batch(ctx, shape, settings);
    ctx.metric("max_batch", static_cast<double>(found.max_batch));
    ctx.metric("bytes_at_max_batch", static_cast<double>(found.bytes_at_max_batch));
    ctx.metric("trials", static_cast<double>(found.trials));
    if (found.hit_limit)
      ctx.note(fmt::format("no OOM up to batch {}: the search stopped there", settings.limit));

    training::note_page_gap(ctx, shape, settings, found.max_batch, analytic_max_batch_, "");
  }

 private:
  // What the model predicts before any allocation: the batch that fits by its arithmetic alone,
  // and by the sim's pages.
  void report_prediction(RunContext& ctx, const training::Shape& shape,
                         const training::SearchSettings& settings, std::uint64_t report_batch) {
    const training::PagePrediction predicted =
        training::predict_max_batch(shape, settings, ctx.budget_bytes());
    analytic_max_batch_ = predicted.analytic;
    ctx.metric("analytic_max_batch", static_cast<double>(predicted.analytic));
    ctx.metric("page_model_max_batch", static_cast<double>(predicted.pages));
    ctx.metric("parameters", static_cast<double>(training::parameter_count(shape)));
    ctx.metric("analytic_peak_bytes_at_batch",
               static_cast<double>(training::analytic_peak(shape, report_batch, settings.steps)));
  }

  std::uint64_t analytic_max_batch_ = 0;
};

OOMLAB_REGISTER_SCENARIO(GrowingBatch)

}  // namespace oomlab
