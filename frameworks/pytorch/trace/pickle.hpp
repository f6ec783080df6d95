// A pickle reader for data only: protocols 2 to 5, dicts, lists, tuples, sets, strings, bytes,
// numbers, booleans and None, and the memo that shares them. Every opcode that would import a
// name, build an object or call code (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ,
// NEWOBJ_EX, EXT*, PERSID, out-of-band buffers) is refused: reading a snapshot runs nothing.
// Strings are views into the document's own copy of the file; a value is a 24-byte node and every
// container's items lie in one array.
#pragma once

#include <bit>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/large_array.hpp"
#include "trace/stop_poll.hpp"

namespace oomlab::torch::pickle {

using namespace oomlab::trace;  // the engine's trace types, which it works in

enum class Kind : std::uint8_t { none, boolean, integer, real, text, bytes, list, tuple, dict };

// 16 bytes a value: a snapshot holds millions of them, and their pages are most of a read's
// cost. Where a value was in the file is found again only for a message (Document::offset).
struct Node {
  // An integer's or boolean's two's complement, a real's bits, a text's or bytes' first byte in
  // the file, or a container's index.
  std::uint64_t value = 0;
  std::uint32_t size = 0;  // a text's or bytes' length
  Kind kind = Kind::none;

  [[nodiscard]] std::int64_t integer() const { return static_cast<std::int64_t>(value); }
  [[nodiscard]] double real() const { return std::bit_cast<double>(value); }
};

class Document {
 public:
  // Throws Error(input) "name: byte N: what" for anything that is not such a pickle; calls `poll`
  // per opcode.
  static Document read(std::string buffer, const std::string& name, StopPoll poll = {});
  static Document read(LargeArray<char> buffer, const std::string& name, StopPoll poll = {});

  [[nodiscard]] const Node& root() const { return nodes_[root_]; }
  [[nodiscard]] const Node& node(std::uint32_t id) const { return nodes_[id]; }
  // A text's or bytes' characters.
  [[nodiscard]] std::string_view text(const Node& node) const {
    return {bytes_.data() + node.value, node.size};
  }
  // A list's or tuple's items; a dict's as key, value, key, value...
  [[nodiscard]] std::span<const std::uint32_t> items(const Node& container) const {
    const Run& run = runs_[container.value];
    return {items_.data() + run.begin, run.count};
  }
  // A dict's value for a text key, or nullptr.
  [[nodiscard]] const Node* get(const Node& dict, std::string_view key) const;
  [[nodiscard]] std::size_t node_count() const { return nodes_.size(); }
  // The byte of the opcode that made a node of this document: the pickle is read again to find
  // it, so call it for a message only.
  [[nodiscard]] std::uint64_t offset(const Node& node) const;

 private:
  friend class Reader;
  // Items of one container that follow each other in items_; while reading, a container filled
  // in several batches is a chain of runs (`next`), made one run when the reading ends.
  static constexpr std::uint32_t kNoRun = UINT32_MAX;
  struct Run {
    std::uint64_t begin = 0;
    std::uint32_t count = 0;
    std::uint32_t next = kNoRun;
  };

  static Document read(std::shared_ptr<const void> owner, std::string_view bytes,
                       const std::string& name, StopPoll poll);

  std::shared_ptr<const void> owner_;  // the file's bytes: nodes' views survive moves
  std::string_view bytes_;
  LargeArray<Node> nodes_;
  LargeArray<Run> runs_;  // a container's first run is runs_[its value]
  LargeArray<std::uint32_t> items_;
  std::uint32_t root_ = 0;
};

}  // namespace oomlab::torch::pickle
