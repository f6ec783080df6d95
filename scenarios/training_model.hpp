// A transformer training step, as the allocations it makes, in order: shared by growing-batch and
// mixed-precision. One plan feeds three sinks: the run context (real allocations, written by
// kernels), a counter (the analytic peak of live bytes) and an unbounded sim (the peak in the
// sim's 2 MiB pages, which predicts the sim's answer exactly).
//
// Sizes follow Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models": a layer holds 12h² + 13h parameters, and its activations take s·b·h·(34 + 5·a·s/h)
// bytes with 16-bit activations: 16-bit tensors scale with the precision, the 1-byte dropout
// masks do not.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "oomlab/params.hpp"
#include "oomlab/scenario.hpp"

namespace oomlab::training {

enum class Optimizer : std::uint8_t { adam, sgd };  // sgd: with momentum (one fp32 buffer)

struct Shape {
  std::uint64_t layers = 8;
  std::uint64_t hidden = 512;
  std::uint64_t heads = 8;
  std::uint64_t seq = 256;
  std::uint64_t vocab = 16384;
  Optimizer optimizer = Optimizer::adam;
  Precision precision = Precision::fp32;  // fp32, or the 16/8-bit working copy of mixed precision
  bool checkpointing = false;
  std::uint64_t accumulation = 1;  // micro-batches per optimizer step
};

// The model's parameters, for a scenario's ParamSpec; `with_precision` adds `precision`.
[[nodiscard]] ParamSpec model_params(bool with_precision);
[[nodiscard]] Shape shape_from(const Params& params);  // precision fp32 when it is not declared
[[nodiscard]] Precision precision_from(const std::string& name);
[[nodiscard]] std::string_view to_string(Precision precision);
void validate_shape(const Params& params);  // throws Error(usage)

// One tensor of the plan. `block` belongs to whichever sink is in use.
struct Tensor {
  std::string_view name;
  std::uint64_t bytes = 0;
  Block block;
};

// Where the plan's allocations go. alloc() returns false when the request failed (an OOM): the
// plan then stops, and the caller frees what is left with TrainingRun::release().
class Sink {
 public:
  Sink() = default;
  virtual ~Sink() = default;
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;
  Sink(Sink&&) = delete;
  Sink& operator=(Sink&&) = delete;

  virtual bool alloc(Tensor& tensor) = 0;
  virtual void free(Tensor& tensor) = 0;
  virtual void cast(const Tensor& /*master*/, const Tensor& /*working*/, Precision /*p*/) {}
  virtual void phase(std::string_view /*name*/) {}
  virtual void step(std::uint64_t /*n*/) {}
};

// One trial: the weights, then optimizer steps at one batch size, then everything freed.
class TrainingRun {
 public:
  TrainingRun(const Shape& shape, std::uint64_t batch, Sink& sink);
  ~TrainingRun() { release(); }
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;
  TrainingRun(TrainingRun&&) = delete;
  TrainingRun& operator=(TrainingRun&&) = delete;

  // The fp32 master weights. False at an OOM.
  bool setup();
  // One optimizer step (accumulation micro-batches, then the update); `n` numbers it in the event
  // log. False at an OOM.
  bool step(std::uint64_t n);
  // Frees everything still allocated, newest first.
  void release();

 private:
  struct Layer {
    std::vector<Tensor> params;  // master fp32
    std::vector<Tensor> working;
    std::vector<Tensor> grads;
    std::vector<Tensor> state;
    std::vector<Tensor> activations;
  };

  bool micro_batch(bool first);
  bool forward();
  bool forward_layer(Layer& layer);
  bool backward(bool first);
  bool backward_layer(Layer& layer, bool first);
  bool optimizer_update(bool first);
  bool activations_of_layer(Layer& layer, bool keep_all);
  bool working_copies(Layer& layer);
  bool grads_of(Layer& layer);
  bool alloc(std::vector<Tensor>& into, std::string_view name, std::uint64_t bytes);
  void free_all(std::vector<Tensor>& tensors);

  Shape shape_;
  std::uint64_t batch_;
  Sink& sink_;
  Layer embedding_;  // token + position embeddings (the output head is tied to it)
  std::vector<Layer> layers_;
  std::vector<Tensor> head_;     // final layernorm input, logits, loss
  std::vector<Tensor> flowing_;  // the activation gradient passed from layer to layer
  std::uint64_t steps_done_ = 0;
};

// The peak of live bytes of one trial (setup + `steps` steps), from the plan alone.
[[nodiscard]] std::uint64_t analytic_peak(const Shape& shape, std::uint64_t batch,
                                          std::uint64_t steps);
// The same plan through an unbounded sim: its peak in 2 MiB pages (`page_bytes`).
[[nodiscard]] std::uint64_t page_model_peak(const Shape& shape, std::uint64_t batch,
                                            std::uint64_t steps, std::uint64_t page_bytes);
// The largest batch in [1, limit] whose `peak(batch)` fits in `budget`; 0 when not even batch 1
// does. Peaks grow with the batch, so this doubles, then bisects.
[[nodiscard]] std::uint64_t largest_fitting(const std::function<std::uint64_t(std::uint64_t)>& peak,
                                            std::uint64_t budget, std::uint64_t limit);

// Parameters of the whole model (each held as an fp32 master).
[[nodiscard]] std::uint64_t parameter_count(const Shape& shape);
// What one layer saves for backward at `batch`, in bytes: s·b·h·(34 + 5·a·s/h) at 16 bits.
[[nodiscard]] std::uint64_t layer_activation_bytes(const Shape& shape, std::uint64_t batch);

}  // namespace oomlab::training
