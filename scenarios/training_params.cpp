// The training model's parameters and their checks, and what the plan predicts without running:
// its peak of live bytes, and its peak in the sim's pages.
#include <fmt/format.h>

#include <memory>

#include "oomlab/error.hpp"
#include "oomlab/sim.hpp"
#include "training_model.hpp"

namespace oomlab::training {

namespace {

ParamDef count(std::string name, std::int64_t value, std::string help) {
  return {.name = std::move(name),
          .type = ParamType::integer,
          .default_value = value,
          .help = std::move(help),
          .min_integer = 1};
}

constexpr std::uint64_t kMaxDimension = 1ULL << 24U;  // keeps every product of sizes far from 2^64

// Counts live bytes; every request succeeds.
class CountingSink final : public Sink {
 public:
  bool alloc(Tensor& t) override {
    live_ += t.bytes;
    peak_ = std::max(peak_, live_);
    return true;
  }
  void free(Tensor& t) override { live_ -= t.bytes; }
  [[nodiscard]] std::uint64_t peak() const { return peak_; }

 private:
  std::uint64_t live_ = 0;
  std::uint64_t peak_ = 0;
};

// The sim with room for anything: its peak of reserved pages is what a sim of any capacity at or
// above it needs (its placement does not depend on capacity).
class PageSink final : public Sink {
 public:
  explicit PageSink(std::uint64_t page_bytes)
      : sim_(make_sim_allocator(
            {.capacity_bytes = kSimMaxCapacityBytes, .page_bytes = page_bytes})) {}
  bool alloc(Tensor& t) override {
    const AllocResult r = sim_->allocate(t.bytes, {});
    if (!r.ok()) return false;
    t.block = Block{r.ptr, t.bytes, AllocStatus::ok};
    peak_ = std::max(peak_, sim_->reserved_bytes());
    return true;
  }
  void free(Tensor& t) override { sim_->deallocate(t.block.ptr, t.bytes, {}); }
  [[nodiscard]] std::uint64_t peak() const { return peak_; }

 private:
  std::unique_ptr<Allocator> sim_;
  std::uint64_t peak_ = 0;
};

template <typename CountingKind>
std::uint64_t peak_of_trial(CountingKind& sink, const Shape& shape, std::uint64_t batch,
                            std::uint64_t steps) {
  TrainingRun run(shape, batch, sink);
  bool ok = run.setup();
  for (std::uint64_t n = 0; ok && n < steps; ++n)
    ok = run.step(n);
  if (!ok) return std::numeric_limits<std::uint64_t>::max();  // does not fit even an unbounded sim
  run.release();
  return sink.peak();
}

}  // namespace

ParamSpec model_params(bool with_precision) {
  ParamSpec spec = {
      count("layers", 8, "transformer layers"),
      count("hidden", 512, "hidden size h"),
      count("heads", 8, "attention heads a (must divide hidden)"),
      count("seq", 256, "sequence length s"),
      count("vocab", 16384, "vocabulary size (tied input/output embedding)"),
      {.name = "optimizer",
       .type = ParamType::choice,
       .default_value = std::string("adam"),
       .help = "adam (two fp32 states a weight) or sgd (with momentum: one)",
       .choices = {"adam", "sgd"}},
      {.name = "checkpointing",
       .type = ParamType::flag,
       .default_value = false,
       .help = "keep only each layer's input; recompute one layer at a time in backward"},
      count("accumulation", 1, "micro-batches per optimizer step (gradient accumulation)"),
      count("batch", 1, "the batch whose analytic peak the run also reports"),
  };
  if (with_precision) {
    spec.insert(
        spec.begin() + 6,
        {.name = "precision",
         .type = ParamType::choice,
         .default_value = std::string("fp32"),
         .help = "fp32, or mixed precision: fp32 master weights with a fp16/bf16/fp8 working copy "
                 "and activations in that type",
         .choices = {"fp32", "fp16", "bf16", "fp8"}});
  }
  return spec;
}

Precision precision_from(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "fp16") return Precision::fp16;
  if (name == "bf16") return Precision::bf16;
  if (name == "fp8") return Precision::fp8_e4m3;
  throw Error(ErrorKind::internal, fmt::format("no precision named '{}'", name));
}

std::string_view to_string(Precision precision) {
  switch (precision) {
    case Precision::fp32:
      return "fp32";
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    case Precision::fp8_e4m3:
      return "fp8";
  }
  return "?";
}

Shape shape_from(const Params& p) {
  Shape s;
  s.layers = static_cast<std::uint64_t>(p.integer("layers"));
  s.hidden = static_cast<std::uint64_t>(p.integer("hidden"));
  s.heads = static_cast<std::uint64_t>(p.integer("heads"));
  s.seq = static_cast<std::uint64_t>(p.integer("seq"));
  s.vocab = static_cast<std::uint64_t>(p.integer("vocab"));
  s.optimizer = p.choice("optimizer") == "sgd" ? Optimizer::sgd : Optimizer::adam;
  s.precision =
      p.values().contains("precision") ? precision_from(p.choice("precision")) : Precision::fp32;
  s.checkpointing = p.flag("checkpointing");
  s.accumulation = static_cast<std::uint64_t>(p.integer("accumulation"));
  return s;
}

void validate_shape(const Params& p) {
  for (const char* name : {"layers", "hidden", "heads", "seq", "vocab", "accumulation", "batch"}) {
    if (static_cast<std::uint64_t>(p.integer(name)) > kMaxDimension) {
      throw_usage(fmt::format("{} = {} is more than this model handles ({})", name, p.integer(name),
                              kMaxDimension));
    }
  }
  if (p.integer("hidden") % p.integer("heads") != 0) {
    throw_usage(fmt::format("hidden ({}) must be a multiple of heads ({})", p.integer("hidden"),
                            p.integer("heads")));
  }
}

std::uint64_t analytic_peak(const Shape& shape, std::uint64_t batch, std::uint64_t steps) {
  CountingSink sink;
  return peak_of_trial(sink, shape, batch, steps);
}

std::uint64_t page_model_peak(const Shape& shape, std::uint64_t batch, std::uint64_t steps,
                              std::uint64_t page_bytes) {
  PageSink sink(page_bytes);
  return peak_of_trial(sink, shape, batch, steps);
}

std::uint64_t largest_fitting(const std::function<std::uint64_t(std::uint64_t)>& peak,
                              std::uint64_t budget, std::uint64_t limit) {
  if (limit == 0 || peak(1) > budget) return 0;
  std::uint64_t good = 1;
  std::uint64_t bad = 0;  // 0: none found yet
  while (bad == 0) {
    const std::uint64_t next = std::min(good * 2, limit);
    if (next == good) return good;
    if (peak(next) <= budget) {
      good = next;
    } else {
      bad = next;
    }
  }
  while (bad - good > 1) {
    const std::uint64_t mid = good + (bad - good) / 2;
    (peak(mid) <= budget ? good : bad) = mid;
  }
  return good;
}

}  // namespace oomlab::training
