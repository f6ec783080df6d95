// The `torch` allocator's options, named as PyTorch names them (PYTORCH_CUDA_ALLOC_CONF without
// the _mb), their checks, and how a snapshot's recorded allocator settings become their defaults
// with the user's options over them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "oomlab/backend.hpp"
#include "oomlab/params.hpp"
#include "oomlab/recorded_settings.hpp"
#include "pytorch/model/torch_config.hpp"

namespace oomlab::torch {

// For the catalogue: `upstream` chooses among `upstreams` (the backends that serve an adaptor).
[[nodiscard]] ParamSpec torch_option_spec(const std::vector<std::string>& upstreams);
// The options of `torch` in the catalogue.
[[nodiscard]] ParamSpec torch_option_spec();
// PyTorch's own limits (max_split_size >= 20 MiB, garbage_collection_threshold in [0, 1),
// roundup_power2_divisions a power of two or 0), and an upstream that can serve it
// (check_upstream); throws Error(usage) naming the option.
void validate_torch_options(const Params& options);
// The upstream is a backend that serves an adaptor (not torch itself), and with expandable
// segments one whose memory the model can map: the sim's pages, or on a device cudaMalloc's
// memory, whose pages PyTorch maps through the CUDA virtual-memory API. async and managed cannot
// (their memory is a pool's, or capped by oomlab, and the mapped pages would be neither):
// Error(usage) saying so.
void check_upstream(const Params& options, bool expandable_segments);

// The options as PYTORCH_CUDA_ALLOC_CONF spells them, those that differ from PyTorch's defaults
// ("expandable_segments:True,max_split_size_mb:128"); "" when none does. PyTorch's own settings
// only: budget_by, upstream, total and large_segment_size are oomlab's.
[[nodiscard]] std::string alloc_conf(const Params& p);

// Where PyTorch's own frontier lies given the model's `model_bytes`, when the model's figure is
// approximate: under backend=async (a model of the driver's pool from measurements,
// async_model.hpp) the range in which PyTorch's measured frontier fell on every job checked. None
// when the model's figure is byte-exact (the native allocator).
using FrontierRange = ByteRange;
[[nodiscard]] std::optional<FrontierRange> frontier_range(const Params& options,
                                                          std::uint64_t model_bytes);

struct ResolvedTorch {
  TorchConfig config;
  Params effective;                // the options as the run used them
  std::vector<std::string> notes;  // what came from the recorded settings, and what did not
};
// The program a snapshot recorded ran under torch.cuda.set_per_process_memory_fraction (its own
// OOM left the device room for the request): its settings record budget_by=fraction, which a
// model takes only when asked by name (a card answers "how much memory").
[[nodiscard]] inline bool ran_under_fraction_cap(const RecordedSettings& recorded) {
  return recorded.get<std::string>("budget_by") == "fraction";
}

// The user's options over the recorded settings over PyTorch's defaults.
[[nodiscard]] ResolvedTorch resolve_torch(const Params& options, const RecordedSettings* recorded);

}  // namespace oomlab::torch
