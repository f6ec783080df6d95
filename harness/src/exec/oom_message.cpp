// The engine's OOM message dialects (the CUDA libraries', CUDA's own) and the asking of every
// registered dialect: a framework's are in its wing (frameworks/NAME/). Each recogniser names, in
// one line, where its message shape comes from. The shapes are
// matched on the words the framework itself prints around the figures, never on "memory" alone,
// so that help texts and host OOMs ("MemoryError", "std::bad_alloc", "Killed") do not count.
#include "exec/oom_message.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "exec/oom_text.hpp"
#include "oomlab/registry.hpp"

namespace oomlab {
namespace {

using oom_text::contains;

constexpr std::size_t kReadBytes =
    std::size_t{64} * 1024;  // a longer line is read in its first 64 KiB
constexpr std::size_t kKeptBytes = 400;

OomReport report_of(std::string_view framework) {
  OomReport report;
  report.framework = framework;
  return report;
}

// The CUDA libraries' status names (cublas_api.h, cudnn.h, cufft.h, cusparse.h,
// cusolver_common.h): allocation failures only; cuDNN's NOT_INITIALIZED is not one. NCCL's
// CUDACHECK (src/include/checks.h) logs "Cuda failure 'out of memory'" (2.x: "Cuda failure 2
// 'out of memory'"), and its allocators "Failed to CUDA calloc".
std::optional<OomReport> cuda_library(std::string_view line) {
  if (contains(line, "Cuda failure 'out of memory'") ||
      contains(line, "Cuda failure 2 'out of memory'") ||
      (contains(line, "NCCL") && contains(line, "Failed to CUDA calloc"))) {
    OomReport report = report_of("NCCL");
    report.library = true;
    return report;
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kStatuses{
      {{"CUBLAS_STATUS_ALLOC_FAILED", "cuBLAS"},
       {"CUDNN_STATUS_ALLOC_FAILED", "cuDNN"},
       {"CUFFT_ALLOC_FAILED", "cuFFT"},
       {"CUSPARSE_STATUS_ALLOC_FAILED", "cuSPARSE"},
       {"CUSOLVER_STATUS_ALLOC_FAILED", "cuSOLVER"}}};
  for (const auto& [status, library] : kStatuses) {
    if (!contains(line, status)) continue;
    OomReport report = report_of(library);
    report.library = true;
    return report;
  }
  return std::nullopt;
}

// cuda.h's CUresult name, cuda_runtime_api.h's cudaError_t name; "GPUassert: out of memory" is
// the widely copied gpuErrchk macro printing cudaGetErrorString.
std::optional<OomReport> cuda_itself(std::string_view line) {
  if (contains(line, "CUDA_ERROR_OUT_OF_MEMORY")) return report_of("CUDA driver");
  if (contains(line, "cudaErrorMemoryAllocation") || contains(line, "GPUassert: out of memory")) {
    return report_of("CUDA runtime");
  }
  return std::nullopt;
}

// The CUDA libraries' advice: their handles and workspaces need room beside the framework's pool.
std::vector<OomAdvice> library_advice() {
  std::vector<OomAdvice> advice;
  for (const char* library : {"cuBLAS", "cuDNN", "cuFFT", "cuSPARSE", "cuSOLVER"}) {
    advice.push_back({.framework = library,
                      .capacity = fmt::format(
                          "{} could not get memory for its handle or workspace: leave it headroom "
                          "below the budget (a smaller batch, or a smaller framework pool)",
                          library)});
  }
  return advice;
}

void add_engine_dialects(Registry& registry) {
  registry.add_oom_dialect({.name = "the CUDA libraries",
                            .rank = 80,
                            .recognise = &cuda_library,
                            .advice = library_advice()});
  registry.add_oom_dialect({.name = "CUDA", .rank = 10, .recognise = &cuda_itself});
}

std::string_view trimmed(std::string_view line) {
  constexpr std::string_view kSpace = " \t\r\n\f\v";
  const std::size_t first = line.find_first_not_of(kSpace);
  if (first == std::string_view::npos) return {};
  return line.substr(first, line.find_last_not_of(kSpace) - first + 1);
}

// The length of the valid UTF-8 sequence at `at`, or 0 (RFC 3629: no overlongs, no surrogates).
std::size_t utf8_length(std::string_view s, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return 1;
  std::size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || at + length > s.size()) return 0;
  const unsigned char second = byte(at + 1);
  const unsigned char low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  const unsigned char high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  if (second < low || second > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if ((byte(at + i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

// The line as it may be shown and written to JSON: control characters as spaces, invalid
// UTF-8 as '?', cut at a character boundary to 400 bytes with "…".
std::string shown(std::string_view line) {
  std::string out;
  out.reserve(std::min(line.size(), kKeptBytes) + 3);
  for (std::size_t at = 0; at < line.size();) {
    const std::size_t length = utf8_length(line, at);
    if (out.size() + std::max<std::size_t>(length, 1) > kKeptBytes) {
      out += "…";
      break;
    }
    const auto c = static_cast<unsigned char>(line[at]);
    if (length == 0) {
      out += '?';
    } else if (c < 0x20 || c == 0x7F) {
      out += ' ';
    } else {
      out.append(line.substr(at, length));
    }
    at += std::max<std::size_t>(length, 1);
  }
  return out;
}

}  // namespace

int ProgramOom::richness() const {
  return static_cast<int>(request_bytes.has_value()) +
         static_cast<int>(device_total_bytes.has_value()) +
         static_cast<int>(device_free_bytes.has_value()) +
         static_cast<int>(process_used_bytes.has_value()) +
         static_cast<int>(framework_allocated_bytes.has_value()) +
         static_cast<int>(framework_cached_free_bytes.has_value()) +
         static_cast<int>(framework_limit_bytes.has_value()) +
         static_cast<int>(framework_largest_free_bytes.has_value());
}

std::optional<ProgramOom> recognise_oom_line(std::string_view line) {
  const std::string_view text = trimmed(line.substr(0, std::min(line.size(), kReadBytes)));
  // TF's BFC allocator warning that the caller will cope (bfc_allocator.cc): not a failure.
  if (text.empty() || contains(text, "The caller indicates that this is not a failure")) {
    return std::nullopt;
  }
  for (const OomDialect& dialect : oom_dialects()) {
    if (std::optional<OomReport> report = dialect.recognise(text)) {
      ProgramOom oom;
      static_cast<OomReport&>(oom) = std::move(*report);
      oom.line = shown(text);
      oom.follow_up = dialect.follow_up;
      return oom;
    }
  }
  return std::nullopt;
}

const std::list<OomDialect>& oom_dialects() {
  static std::once_flag once;
  std::call_once(once, [] {
    Registry& registry = Registry::global();
    add_engine_dialects(registry);
    for (const Framework& framework : registry.frameworks()) {
      if (framework.add_oom_dialects != nullptr) framework.add_oom_dialects(registry);
    }
  });
  return Registry::global().oom_dialects();
}

const OomAdvice* oom_advice(std::string_view framework) {
  for (const OomDialect& dialect : oom_dialects()) {
    for (const OomAdvice& advice : dialect.advice) {
      if (advice.framework == framework) return &advice;
    }
  }
  return nullptr;
}

}  // namespace oomlab
