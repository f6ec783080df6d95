// mixed-precision: "I turned on AMP and ran out of memory sooner." Mixed precision keeps the fp32
// master weights and adds a 16- (or 8-) bit working copy of each, cast as the forward pass reaches
// it (what autocast does); only the activations shrink. When weights dominate, the extra copy
// costs more than the activations save and the largest batch goes down (pytorch#120994); when
// activations dominate, 16 bits fit close to twice the batch. This runs the growing-batch search
// once per precision and reports each largest batch and its ratio to fp32.
#include <fmt/format.h>

#include <algorithm>

#include "batch_search.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"
#include "training_model.hpp"

namespace oomlab {

class MixedPrecision final : public Scenario {
 public:
  [[nodiscard]] std::string_view name() const override { return "mixed-precision"; }
  [[nodiscard]] std::string_view summary() const override {
    return "the largest batch in fp32, fp16, bf16 and fp8: where AMP helps and where it costs "
           "memory";
  }
  [[nodiscard]] std::string_view details() const override {
    return "Runs growing-batch's search for each of precisions=fp32,fp16,bf16,fp8 (fp32 master "
           "weights "
           "always; a working copy cast with CUDA's own types, and activations, in the lower "
           "precision). "
           "Metrics per precision: max_batch_<p>, ratio_<p> (to fp32), analytic_max_batch_<p>, "
           "page_model_max_batch_<p> (in 2 MiB pages: the sim's exact answer), "
           "analytic_peak_bytes_at_batch_1_<p>; a note per precision where pages cost a batch.\n"
           "Two configurations to try at --budget=2GiB:\n"
           "  activation-dominated (the usual gain, 16-bit fits >= 1.6x the fp32 batch): the "
           "defaults,\n"
           "    -p layers=8 -p hidden=512 -p heads=8 -p seq=256 -p vocab=16384\n"
           "  weights-dominated (AMP uses more memory than fp32, as in PyTorch issue 120994): fp16 "
           "fits\n"
           "    batch 16 where fp32 fits 36 on the sim,\n"
           "    -p layers=2 -p hidden=2048 -p heads=16 -p seq=32 -p vocab=8192";
  }

  [[nodiscard]] ParamSpec params() const override {
    ParamSpec spec = training::model_params(false);
    spec.push_back({.name = "precisions",
                    .type = ParamType::choices,
                    .default_value = ChoiceList{"fp32", "fp16", "bf16", "fp8"},
                    .help = "the precisions to search, in order",
                    .choices = {"fp32", "fp16", "bf16", "fp8"}});
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
    const training::SearchSettings settings = training::search_settings(p);
    std::vector<std::pair<std::string, std::uint64_t>> found;
    for (const std::string& name : p.choices("precisions")) {
      training::Shape shape = training::shape_from(p);
      shape.precision = training::precision_from(name);
      const std::uint64_t analytic = report_prediction(ctx, shape, settings, name);
      ctx.phase(name);
      const training::SearchResult result = training::find_max_batch(ctx, shape, settings);
      training::note_page_gap(ctx, shape, settings, result.max_batch, analytic, name + ": ");
      ctx.metric("max_batch_" + name, static_cast<double>(result.max_batch));
      ctx.metric("bytes_at_max_batch_" + name, static_cast<double>(result.bytes_at_max_batch));
      found.emplace_back(name, result.max_batch);
    }
    compare_with_fp32(ctx, p, settings, found);
  }

 private:
  // The precision's predicted largest batch, by arithmetic and in pages; returns the former.
  static std::uint64_t report_prediction(RunContext& ctx, const training::Shape& shape,
                                         const training::SearchSettings& settings,
                                         const std::string& name) {
    const training::PagePrediction predicted =
        training::predict_max_batch(shape, settings, ctx.budget_bytes());
    ctx.metric("analytic_max_batch_" + name, static_cast<double>(predicted.analytic));
    ctx.metric("page_model_max_batch_" + name, static_cast<double>(predicted.pages));
    ctx.metric("analytic_peak_bytes_at_batch_1_" + name,
               static_cast<double>(training::analytic_peak(shape, 1, settings.steps)));
    return predicted.analytic;
  }

  static void compare_with_fp32(RunContext& ctx, const Params& p,
                                const training::SearchSettings& settings,
                                const std::vector<std::pair<std::string, std::uint64_t>>& found) {
    const auto fp32 =
        std::find_if(found.begin(), found.end(), [](const auto& f) { return f.first == "fp32"; });
    if (fp32 == found.end() || fp32->second == 0) return;
    training::Shape shape = training::shape_from(p);
    const std::uint64_t fp32_peak = training::analytic_peak(shape, 1, settings.steps);
    for (const auto& [name, batch] : found) {
      if (name == "fp32") continue;
      const double ratio = static_cast<double>(batch) / static_cast<double>(fp32->second);
      ctx.metric("ratio_" + name, ratio);
      shape.precision = training::precision_from(name);
      const std::uint64_t peak = training::analytic_peak(shape, 1, settings.steps);
      std::string text = fmt::format("{} fits batch {} against fp32's {} ({:.2f}x)", name, batch,
                                     fp32->second, ratio);
      if (batch < fp32->second) {
        text += ": its working copy of the weights costs more than its smaller activations save";
      }
      if (peak > fp32_peak) {
        text += fmt::format("; at batch 1 it needs {} against fp32's {} (weights dominate there)",
                            format_bytes(peak), format_bytes(fp32_peak));
      }
      ctx.note(text);
    }
  }
};

OOMLAB_REGISTER_SCENARIO(MixedPrecision)

}  // namespace oomlab
