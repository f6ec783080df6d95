#include "pytorch/exec/program_shim.hpp"

#include "pytorch/exec/shim_source.hpp"  // generated from oomlab_pytorch_shim.py

namespace oomlab::torch {

ProgramShim program_shim() {
  return {.module = "oomlab_pytorch_shim",
          .source = generated::kPytorchShim,
          .stops = {{"torch", "the program imported torch but never initialised CUDA"},
                    {"torch-import", "the program's import of torch did not complete"},
                    {"python", "the program never imported torch"}}};
}

}  // namespace oomlab::torch
