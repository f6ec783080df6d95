#include <fmt/format.h>

#include "oomlab/error.hpp"
#include "oomlab/trace_format.hpp"
#include "pytorch/trace/pytorch_import.hpp"

namespace oomlab::torch {

using namespace oomlab::trace;  // the engine's trace types, which it works in

bool is_pytorch_snapshot(std::string_view head) {
  if (!head.empty() && static_cast<unsigned char>(head[0]) == 0x80) return true;  // pickle PROTO
  return first_content(head).starts_with('{');                                    // JSON
}

Format pytorch_format() {
  static const Format kFormat = [] {
    const FormatInfo* info = find_format(kPytorchFormatName);
    if (info == nullptr) throw Error(ErrorKind::internal, "the pytorch format is not registered");
    return info->format;
  }();
  return kFormat;
}

}  // namespace oomlab::torch
