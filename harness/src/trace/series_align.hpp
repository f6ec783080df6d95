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
// frames the key is the operation and the stream alone: the sequence decides. With `tell_tiny`,
// an allocation under 4 KiB (a scalar, a norm's statistics) has a key of its own. With
// `by_stream`, an allocation "freed by the very next event" is freed by the next event of its own
// stream (where another stream's events fall between at random: a side stream's).
[[nodiscard]] std::vector<std::uint64_t> request_keys(const Trace& trace, bool tell_tiny = false,
                                                      bool by_stream = false);

// How many allocations `match` pairs that no line in the value could join: one under 4 KiB, the
// other 16 times that or more. One call may make a tensor more at one value than at another
// (group_norm at batch 1 and at 2), and where every request of the call has the same key, the
// shortest edit pairs its 64-byte statistics with the extra 256 MiB tensor. Keys that tell tiny
// requests apart then align it; they are not the rule, since a size that crosses 4 KiB between
// two values (an output of 1,000 floats a sample) would no longer find its counterpart.
[[nodiscard]] std::uint64_t implausible_pairs(const Trace& other, const Trace& anchor,
                                              const std::vector<std::uint32_t>& match);

// For each position of `anchor`, the position of `other` matched to it (Event::kNone: none), or
// none when the two differ by more than `most_edits` insertions and deletions.
[[nodiscard]] std::optional<std::vector<std::uint32_t>> align_keys(
    const std::vector<std::uint64_t>& other, const std::vector<std::uint64_t>& anchor,
    std::uint32_t most_edits);

}  // namespace oomlab::trace
