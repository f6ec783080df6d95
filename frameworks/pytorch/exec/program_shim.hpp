// PyTorch's part of exec's start-up shim (Framework::program_shim): oomlab_pytorch_shim.py, which
// records PyTorch's memory history in every Python process of the program and writes its
// snapshot at an OOM and at exit.
#pragma once

#include "oomlab/framework.hpp"

namespace oomlab::torch {

[[nodiscard]] ProgramShim program_shim();

}  // namespace oomlab::torch
