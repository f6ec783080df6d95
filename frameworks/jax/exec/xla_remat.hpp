// XLA's warning when its rematerialisation cannot bring a step under the memory the limit it
// compiles for leaves the step, on the program's stderr (a W line of absl's, not in the INFO log
// exec keeps apart): "Can't reduce memory use below 5.64GiB (6057048687 bytes) by
// rematerialization; only reduced to 7.17GiB (7696451407 bytes), down from 12.14GiB (13037330876
// bytes) originally". XLA compiles a step on the thread that then runs it, so the warning of the
// step the pool refused is the last one on the thread that logged the refusal ("Allocator
// (GPU_0_bfc) ran out of memory trying to allocate 7.12GiB (rounded to 7640827904) ...").
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

namespace oomlab::jax {

struct RematShortfall {
  std::uint64_t target_bytes = 0;    // what the limit leaves the step: "below"
  std::uint64_t reduced_bytes = 0;   // the least XLA brought it to: "only reduced to"
  std::uint64_t original_bytes = 0;  // before it: "down from"
  std::size_t line = 0;              // in the file, from 1
};

// A log line's message (after "] ") as that warning's figures, each the count in its parentheses
// (the figure printed before it, to two decimals, where that count is garbled); none for any other.
[[nodiscard]] std::optional<RematShortfall> read_remat_warning(std::string_view message);

// The warning of the step whose request of `request_bytes` the pool refused (its refusal's
// "rounded to" less than 256 bytes over it, the BFC allocator's rounding; the last such refusal,
// the fatal one): the last warning on the refusal's thread before it (on any thread where the
// lines name none, TensorFlow's default prefix). A line a progress bar began without a newline
// is read from the log's prefix on. None where there is none, or the file cannot be read. An
// earlier step's warning on that thread is not told apart: the caller checks its figures.
[[nodiscard]] std::optional<RematShortfall> remat_shortfall(
    const std::filesystem::path& stderr_file, std::uint64_t request_bytes);

}  // namespace oomlab::jax
