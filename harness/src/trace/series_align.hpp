// One trace's requests matched to another's, one to one, for a program traced at two values of a
// parameter (a batch size): the same program makes the same requests in the same order, at other
// sizes. A request is keyed by what it is, not by its size: allocation or free, its stream, and
// the frames that made it where the trace recorded frames (a free by the key of the allocation it
// frees). Keys are matched by the shortest edit between the two sequences (Myers' O(ND) diff),
// so that a request present at one value only (a library's workspace, another kernel's buffer)
// shifts nothing after it.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "oomlab/trace.hpp"

namespace oomlab::trace {

// The key of each allocation, free and failed request of `trace`, by position. Without recorded
// frames the key is the operation and the stream alone: the sequence decides.
[[nodiscard]] std::vector<std::uint64_t> request_keys(const Trace& trace);

// For each position of `anchor`, the position of `other` matched to it (Event::kNone: none), or
// none when the two differ by more than `most_edits` insertions and deletions.
[[nodiscard]] std::optional<std::vector<std::uint32_t>> align_keys(
    const std::vector<std::uint64_t>& other, const std::vector<std::uint64_t>& anchor,
    std::uint32_t most_edits);

}  // namespace oomlab::trace
