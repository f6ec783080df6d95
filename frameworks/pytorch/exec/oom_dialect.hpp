// PyTorch's OOM message dialects (oomlab/framework.hpp), for its registration (pytorch.cpp).
#pragma once

#include <vector>

#include "oomlab/framework.hpp"

namespace oomlab::torch {

[[nodiscard]] std::vector<OomDialect> pytorch_oom_dialects();

}  // namespace oomlab::torch
