// A pickle reader for data only: protocols 2 to 5, dicts, lists, tuples, sets, strings, bytes,
// numbers, booleans and None, and the memo that shares them. Every opcode that would import a
// name, build an object or call code (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ,
// NEWOBJ_EX, EXT*, PERSID, out-of-band buffers) is refused: reading a snapshot runs nothing.
// Strings are views into the document's own copy of the file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/stop_poll.hpp"

namespace oomlab::trace::pickle {

enum class Kind : std::uint8_t { none, boolean, integer, real, text, bytes, list, tuple, dict };

struct Node {
  Kind kind = Kind::none;
  std::uint32_t offset = 0;  // the byte of the opcode that made it, for messages
  std::uint32_t items = 0;   // containers: their index in Document's containers
  std::int64_t integer = 0;  // integers and booleans
  double real = 0.0;
  std::string_view text;  // text and bytes
};

class Document {
 public:
  // Throws Error(input) "name: byte N: what" for anything that is not such a pickle; calls `poll`
  // per opcode.
  static Document read(std::string buffer, const std::string& name, StopPoll poll = {});

  [[nodiscard]] const Node& root() const { return nodes_[root_]; }
  [[nodiscard]] const Node& node(std::uint32_t id) const { return nodes_[id]; }
  // A list's or tuple's items; a dict's as key, value, key, value...
  [[nodiscard]] std::span<const std::uint32_t> items(const Node& container) const {
    return containers_[container.items];
  }
  // A dict's value for a text key, or nullptr.
  [[nodiscard]] const Node* get(const Node& dict, std::string_view key) const;
  [[nodiscard]] std::size_t node_count() const { return nodes_.size(); }

 private:
  friend class Reader;
  std::unique_ptr<const std::string>
      buffer_;  // on the heap: nodes' views survive moves of the Document
  std::vector<Node> nodes_;
  std::vector<std::vector<std::uint32_t>> containers_;
  std::uint32_t root_ = 0;
};

}  // namespace oomlab::trace::pickle
