// The pickle reader's state and the few steps every opcode takes, for pickle.cpp (the opcodes a
// snapshot is made of, the containers, the Document) and pickle_ops.cpp (the other opcodes).
#pragma once

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <limits>

#include "oomlab/error.hpp"
#include "pytorch/trace/pickle.hpp"

namespace oomlab::torch::pickle {

using namespace oomlab::trace;  // the engine's trace types, which it works in

// Reads opcodes into the Document's nodes, runs and items. Nothing is formatted on the way: the
// opcode's byte is kept (at_) and a message is made only when something is wrong.
class Reader {
 public:
  // With `offsets`, the byte of each node's opcode is added to it as the node is made.
  Reader(Document& doc, std::string_view data, const std::string& name, StopPoll poll,
         std::vector<std::uint64_t>* offsets = nullptr)
      : doc_(doc), name_(name), data_(data), poll_(std::move(poll)), offsets_(offsets) {}

  void run();

 private:
  using Run = Document::Run;

  // Out of line and cold: the steps every opcode takes stay small enough to inline.
  [[noreturn, gnu::cold, gnu::noinline]] void fail(std::string_view what) const {
    throw Error(ErrorKind::input, fmt::format("{}: byte {}: {}", name_, at_, what));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_inside(const char* what) const {
    fail(fmt::format("the file ends inside {}", what));
  }
  [[noreturn, gnu::cold, gnu::noinline]] void fail_unstored(std::uint64_t index) const {
    fail(fmt::format("memo entry {} was never stored", index));
  }
  [[gnu::always_inline]] std::string_view take(std::uint64_t count, const char* what) {
    if (count > data_.size() - pos_) [[unlikely]]
      fail_inside(what);
    const std::string_view bytes(data_.data() + pos_, count);
    pos_ += count;
    return bytes;
  }
  template <typename T>
  [[gnu::always_inline]] T little(const char* what) {  // an unsigned little-endian number
    const std::string_view bytes = take(sizeof(T), what);
    T value = 0;
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(&value, bytes.data(), sizeof(T));  // one load, not a loop of shifts
    } else {
      for (std::size_t i = 0; i < sizeof(T); ++i)
        value |= static_cast<T>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    }
    return value;
  }
  [[gnu::always_inline]] std::uint32_t push_new(Kind kind, std::uint64_t value,
                                                std::uint32_t size = 0) {
    if (doc_.nodes_.size() >= std::numeric_limits<std::uint32_t>::max()) [[unlikely]]
      fail("too many objects");
    doc_.nodes_.push_back(Node{.value = value, .size = size, .kind = kind});
    if (offsets_ != nullptr) offsets_->push_back(at_);
    const auto id = static_cast<std::uint32_t>(doc_.nodes_.size() - 1);
    stack_.push_back(id);
    return id;
  }
  void push_integer(std::int64_t value) {
    push_new(Kind::integer, static_cast<std::uint64_t>(value));
  }
  void push_text(Kind kind, std::uint64_t length, const char* what) {
    if (length > std::numeric_limits<std::uint32_t>::max()) fail("a string of 4 GiB or more");
    const std::string_view bytes = take(length, what);
    push_new(kind, static_cast<std::uint64_t>(bytes.data() - data_.data()),
             static_cast<std::uint32_t>(length));
  }
  // A container holding `count` values taken from the top of the stack.
  void push_container(Kind kind, std::size_t count = 0);
  std::uint32_t pop() {
    if (stack_.size() <= floor()) fail("an opcode needs a value the stack does not hold");
    const std::uint32_t id = stack_.back();
    stack_.pop_back();
    return id;
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  std::size_t pop_mark() {
    if (marks_.empty()) fail("an opcode needs a MARK there is none of");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    return mark;
  }
  [[gnu::always_inline]] void fetch(std::uint64_t index) {
    if (index >= memo_.size() || memo_[index] == kUnset) [[unlikely]]
      fail_unstored(index);
    stack_.push_back(memo_[index]);
  }
  void memoize(std::uint64_t index) {
    if (stack_.empty()) fail("a memo entry of nothing");
    if (index > data_.size()) fail("a memo index past any the file could use");
    if (memo_.size() <= index) memo_.resize(index + 1, kUnset);
    memo_[index] = stack_.back();
  }
  std::uint32_t container_under(std::size_t depth, Kind kind, const char* op);
  void append(std::uint32_t container, std::size_t from);
  void extend(std::size_t mark, Kind kind, const char* op);
  void integer(std::string_view bytes);
  void finish();
  void other_op(unsigned char op);
  bool data_op(unsigned char op);
  bool text_op(unsigned char op);
  bool container_op(unsigned char op);
  bool memo_op(unsigned char op);

  Document& doc_;
  const std::string& name_;
  std::string_view data_;
  std::size_t pos_ = 0;
  std::size_t at_ = 0;  // the current opcode's byte
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::vector<std::uint32_t> memo_;
  LargeArray<std::uint32_t> last_run_;  // by run: a chained container's last run
  StopPoll poll_;
  std::vector<std::uint64_t>* offsets_;
  static constexpr std::uint32_t kUnset = std::numeric_limits<std::uint32_t>::max();
};

}  // namespace oomlab::torch::pickle
