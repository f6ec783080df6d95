#include "training_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "oomlab/error.hpp"

namespace oomlab::training {

namespace {

constexpr std::uint64_t kFp32Bytes = 4;

// Sizes multiply fast (s·b·V for the logits); a product past 2^64 saturates, and an allocation
// of that size simply fails.
std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) {
    return std::numeric_limits<std::uint64_t>::max();
  }
  return a * b;
}
std::uint64_t mul(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return mul(mul(a, b), c);
}

struct Count {
  std::string_view name;
  std::uint64_t elements;
  bool mask = false;  // a dropout mask: one byte an element whatever the precision
};

// 12h² + 13h parameters a layer.
std::vector<Count> layer_parameters(std::uint64_t h) {
  return {{"qkv.weight", 3 * h * h + 3 * h},
          {"attn_out.weight", h * h + h},
          {"fc1.weight", 4 * h * h + 4 * h},
          {"fc2.weight", 4 * h * h + h},
          {"layernorms", 4 * h}};
}

// The token embedding doubles as the output head (tied weights).
std::vector<Count> embedding_parameters(const Shape& s) {
  return {{"token_embedding", mul(s.vocab, s.hidden)},
          {"position_embedding", mul(s.seq, s.hidden)},
          {"final_layernorm", 2 * s.hidden}};
}

// What one layer saves for backward, in forward order: 34·sbh + 5·a·s²·b bytes at 16 bits.
std::vector<Count> layer_activations(const Shape& s, std::uint64_t b) {
  const std::uint64_t sbh = mul(s.seq, b, s.hidden);
  const std::uint64_t as2b = mul(mul(s.heads, s.seq), mul(s.seq, b));
  return {{"ln1.input", sbh},
          {"qkv.input", sbh},
          {"q", sbh},
          {"k", sbh},
          {"attention.scores", as2b},
          {"attention.dropout_mask", as2b, true},
          {"attention.probs", as2b},
          {"v", sbh},
          {"attn_out.input", sbh},
          {"attn_out.dropout_mask", sbh, true},
          {"ln2.input", sbh},
          {"fc1.input", sbh},
          {"gelu.input", mul(4, sbh)},
          {"fc2.input", mul(4, sbh)},
          {"mlp.dropout_mask", sbh, true}};
}

std::uint64_t activation_bytes(const Count& c, Precision p) {
  return c.mask ? c.elements : mul(c.elements, element_bytes(p));
}

}  // namespace

TrainingRun::TrainingRun(const Shape& shape, std::uint64_t batch, Sink& sink)
    : shape_(shape), batch_(batch), sink_(sink), layers_(shape.layers) {
}

bool TrainingRun::alloc(std::vector<Tensor>& into, std::string_view name, std::uint64_t bytes) {
  into.push_back(Tensor{name, bytes, {}});
  if (sink_.alloc(into.back())) return true;
  into.pop_back();
  return false;
}

void TrainingRun::free_all(std::vector<Tensor>& tensors) {
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it)
    sink_.free(*it);
  tensors.clear();
}

bool TrainingRun::setup() {
  sink_.phase("weights");
  for (const Count& c : embedding_parameters(shape_)) {
    if (!alloc(embedding_.params, c.name, mul(c.elements, kFp32Bytes))) return false;
  }
  for (Layer& layer : layers_) {
    for (const Count& c : layer_parameters(shape_.hidden)) {
      if (!alloc(layer.params, c.name, mul(c.elements, kFp32Bytes))) return false;
    }
  }
  return true;
}

bool TrainingRun::step(std::uint64_t n) {
  sink_.step(n);
  for (std::uint64_t micro = 0; micro < shape_.accumulation; ++micro) {
    if (!micro_batch(micro == 0)) return false;
  }
  return optimizer_update(steps_done_++ == 0);  // this trial's first step creates the state
}

bool TrainingRun::micro_batch(bool first) {
  return forward() && backward(first);
}

// Mixed precision: a 16- or 8-bit copy of each master weight, cast as the forward pass reaches
// it and kept until backward is done with it (what autocast's weight casts do).
bool TrainingRun::working_copies(Layer& layer) {
  if (shape_.precision == Precision::fp32) return true;
  for (const Tensor& master : layer.params) {
    if (!alloc(layer.working, "working_copy",
               mul(master.bytes / kFp32Bytes, element_bytes(shape_.precision)))) {
      return false;
    }
    sink_.cast(master, layer.working.back(), shape_.precision);
  }
  return true;
}

bool TrainingRun::activations_of_layer(Layer& layer, bool keep_all) {
  const std::vector<Count> counts = layer_activations(shape_, batch_);
  // With checkpointing the layer input is kept and the rest recomputed in backward.
  const std::size_t first = layer.activations.empty() ? 0 : 1;
  for (std::size_t i = first; i < counts.size(); ++i) {
    if (!alloc(layer.activations, counts[i].name, activation_bytes(counts[i], shape_.precision)))
      return false;
  }
  if (!keep_all) {
    while (layer.activations.size() > 1) {
      sink_.free(layer.activations.back());
      layer.activations.pop_back();
    }
  }
  return true;
}

bool TrainingRun::forward_layer(Layer& layer) {
  return working_copies(layer) && activations_of_layer(layer, !shape_.checkpointing);
}

bool TrainingRun::forward() {
  sink_.phase("forward");
  if (!working_copies(embedding_)) return false;
  for (Layer& layer : layers_) {
    if (!forward_layer(layer)) return false;
  }
  const std::uint64_t e = element_bytes(shape_.precision);
  return alloc(head_, "final_layernorm.input", mul(mul(shape_.seq, batch_, shape_.hidden), e)) &&
         alloc(head_, "logits", mul(mul(shape_.seq, batch_, shape_.vocab), e)) &&
         alloc(head_, "loss", kFp32Bytes);
}

bool TrainingRun::grads_of(Layer& layer) {
  for (auto it = layer.params.rbegin(); it != layer.params.rend(); ++it) {
    if (!alloc(layer.grads, "grad", it->bytes)) return false;  // fp32, like the masters
  }
  return true;
}

bool TrainingRun::backward_layer(Layer& layer, bool first) {
  if (shape_.checkpointing && !activations_of_layer(layer, true)) return false;  // recompute
  std::vector<Tensor> input_grad;
  if (!alloc(input_grad, "activation.grad",
             mul(mul(shape_.seq, batch_, shape_.hidden), element_bytes(shape_.precision)))) {
    return false;
  }
  if (first && !grads_of(layer)) {
    free_all(input_grad);
    return false;
  }
  free_all(layer.activations);
  free_all(flowing_);
  flowing_ = std::move(input_grad);
  free_all(layer.working);
  return true;
}

bool TrainingRun::backward(bool first) {
  sink_.phase("backward");
  const std::uint64_t e = element_bytes(shape_.precision);
  sink_.free(head_.back());  // the loss
  head_.pop_back();
  std::vector<Tensor> logits_grad;
  if (!alloc(logits_grad, "logits.grad", head_.back().bytes)) return false;
  sink_.free(head_.back());  // the logits
  head_.pop_back();
  if (first && !grads_of(embedding_)) return false;
  if (!alloc(flowing_, "activation.grad", mul(mul(shape_.seq, batch_, shape_.hidden), e)))
    return false;
  free_all(logits_grad);
  free_all(head_);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    if (!backward_layer(*it, first)) return false;
  }
  free_all(flowing_);
  free_all(embedding_.working);
  return true;
}

bool TrainingRun::optimizer_update(bool first) {
  sink_.phase("optimizer");
  std::vector<Layer*> all{&embedding_};
  for (Layer& layer : layers_)
    all.push_back(&layer);
  if (first) {  // optimizer state appears at the first step and stays
    for (Layer* layer : all) {
      for (const Tensor& p : layer->params) {
        if (!alloc(layer->state, "optimizer.exp_avg", p.bytes)) return false;
        if (shape_.optimizer == Optimizer::adam &&
            !alloc(layer->state, "optimizer.exp_avg_sq", p.bytes)) {
          return false;
        }
      }
    }
  }
  for (Layer* layer : all) {
    for (const Tensor& p : layer->params) {
      std::vector<Tensor> temporary;
      if (!alloc(temporary, "optimizer.update", p.bytes)) return false;
      free_all(temporary);
    }
  }
  for (Layer* layer : all)
    free_all(layer->grads);  // zero_grad(set_to_none=True)
  return true;
}

void TrainingRun::release() {
  free_all(head_);
  free_all(flowing_);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    free_all(it->activations);
    free_all(it->working);
    free_all(it->grads);
  }
  free_all(embedding_.working);
  free_all(embedding_.grads);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it)
    free_all(it->state);
  free_all(embedding_.state);
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it)
    free_all(it->params);
  free_all(embedding_.params);
}

std::uint64_t layer_activation_bytes(const Shape& shape, std::uint64_t batch) {
  std::uint64_t total = 0;
  for (const Count& c : layer_activations(shape, batch))
    total += activation_bytes(c, shape.precision);
  return total;
}

std::uint64_t parameter_count(const Shape& shape) {
  std::uint64_t total = 0;
  for (const Count& c : embedding_parameters(shape))
    total += c.elements;
  for (const Count& c : layer_parameters(shape.hidden))
    total += mul(c.elements, shape.layers);
  return total;
}

}  // namespace oomlab::training
