// PyTorch's own spelling of its allocator settings, as PYTORCH_CUDA_ALLOC_CONF writes them
// ("expandable_segments:True,max_split_size_mb:128,backend:cudaMallocAsync"), read as the
// `torch` allocator's options ("expandable_segments=on", "max_split_size=128MiB", ...), so that a
// user can paste what their job sets.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace oomlab::torch {

using namespace oomlab::cli;  // the engine's cli types, which it works in

// The items of an option list, split at commas outside brackets (roundup_power2_divisions takes
// "[256:1,512:2]"). An item in PyTorch's KEY:VALUE becomes oomlab's key=value; one already in
// key=value is kept. Settings that do not change device memory (pinned_*,
// release_lock_on_cudamalloc, graph_capture_record_stream_reuse) are dropped. An unknown key, or
// a value PyTorch would refuse, throws Error(usage) naming it and `flag`.
[[nodiscard]] std::vector<std::string> torch_assignments(std::string_view list,
                                                         std::string_view flag);

}  // namespace oomlab::torch
