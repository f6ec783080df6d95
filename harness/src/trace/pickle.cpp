#include "trace/pickle.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <limits>

#include "oomlab/error.hpp"
#include "trace/pickle_opcodes.hpp"

namespace oomlab::trace::pickle {

class Reader {
 public:
  Reader(Document& doc, const std::string& name, StopPoll poll)
      : doc_(doc), name_(name), data_(*doc.buffer_), poll_(std::move(poll)) {}

  void run();

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw Error(ErrorKind::input, fmt::format("{}: byte {}: {}", name_, at_, what));
  }
  std::string_view take(std::uint64_t count, const char* what) {
    if (count > data_.size() - pos_) fail(fmt::format("the file ends inside {}", what));
    const std::string_view bytes = data_.substr(pos_, count);
    pos_ += count;
    return bytes;
  }
  template <typename T>
  T little(const char* what) {  // an unsigned little-endian number
    const std::string_view bytes = take(sizeof(T), what);
    T value = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      value |= static_cast<T>(static_cast<unsigned char>(bytes[i])) << (8 * i);
    return value;
  }
  std::uint32_t push_new(Node node) {
    if (doc_.nodes_.size() >= std::numeric_limits<std::uint32_t>::max()) fail("too many objects");
    node.offset = static_cast<std::uint32_t>(at_);
    doc_.nodes_.push_back(node);
    const auto id = static_cast<std::uint32_t>(doc_.nodes_.size() - 1);
    stack_.push_back(id);
    return id;
  }
  std::uint32_t push_container(Kind kind) {
    doc_.containers_.emplace_back();
    return push_new(
        Node{.kind = kind, .items = static_cast<std::uint32_t>(doc_.containers_.size() - 1)});
  }
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
  Node& container_under(std::size_t depth, Kind a, Kind b, const char* op);
  void extend(std::size_t mark, Kind a, Kind b, const char* op);
  void integer(std::string_view bytes);
  bool data_op(unsigned char op);
  bool text_op(unsigned char op);
  bool container_op(unsigned char op);
  bool tuple_op(unsigned char op);
  bool memo_op(unsigned char op);

  Document& doc_;
  const std::string& name_;
  std::string_view data_;
  std::size_t pos_ = 0;
  std::size_t at_ = 0;  // the current opcode's byte
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::vector<std::uint32_t> memo_;
  StopPoll poll_;
  static constexpr std::uint32_t kUnset = std::numeric_limits<std::uint32_t>::max();
};

Node& Reader::container_under(std::size_t depth, Kind a, Kind b, const char* op) {
  if (stack_.size() < depth + 1) fail(fmt::format("{} has no container to add to", op));
  Node& target = doc_.nodes_[stack_[stack_.size() - depth - 1]];
  if (target.kind != a && target.kind != b)
    fail(fmt::format("{} adds to something that is not a container", op));
  return target;
}

// Moves stack[mark..] into the container just below the mark.
void Reader::extend(std::size_t mark, Kind a, Kind b, const char* op) {
  if (mark == 0) fail(fmt::format("{} has no container to add to", op));
  Node& target = doc_.nodes_[stack_[mark - 1]];
  if (target.kind != a && target.kind != b)
    fail(fmt::format("{} adds to something that is not a container", op));
  if (a == Kind::dict && (stack_.size() - mark) % 2 != 0) fail("SETITEMS with a key and no value");
  auto& items = doc_.containers_[target.items];
  items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
  stack_.resize(mark);
}

// A little-endian two's complement integer (LONG1, LONG4) of up to 8 bytes.
void Reader::integer(std::string_view bytes) {
  if (bytes.size() > 8) fail("an integer larger than 64 bits");
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    value |= std::uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  if (!bytes.empty() && bytes.size() < 8 &&
      (static_cast<unsigned char>(bytes.back()) & 0x80U) != 0) {
    value |= ~std::uint64_t{0} << (8 * bytes.size());  // sign-extend
  }
  push_new(Node{.kind = Kind::integer, .integer = static_cast<std::int64_t>(value)});
}

bool Reader::data_op(unsigned char op) {
  switch (op) {
    case kNone:
      push_new(Node{.kind = Kind::none});
      return true;
    case kNewTrue:
      push_new(Node{.kind = Kind::boolean, .integer = 1});
      return true;
    case kNewFalse:
      push_new(Node{.kind = Kind::boolean, .integer = 0});
      return true;
    case kBinInt:
      push_new(Node{.kind = Kind::integer,
                    .integer = static_cast<std::int32_t>(little<std::uint32_t>("BININT"))});
      return true;
    case kBinInt1:
      push_new(Node{.kind = Kind::integer, .integer = little<std::uint8_t>("BININT1")});
      return true;
    case kBinInt2:
      push_new(Node{.kind = Kind::integer, .integer = little<std::uint16_t>("BININT2")});
      return true;
    case kLong1:
      integer(take(little<std::uint8_t>("LONG1"), "LONG1"));
      return true;
    case kLong4:
      integer(take(little<std::uint32_t>("LONG4"), "LONG4"));
      return true;
    case kBinFloat: {
      const std::string_view bytes = take(8, "BINFLOAT");
      std::uint64_t bits = 0;
      for (const char c : bytes)
        bits = (bits << 8U) | static_cast<unsigned char>(c);  // big-endian
      push_new(Node{.kind = Kind::real, .real = std::bit_cast<double>(bits)});
      return true;
    }
    default:
      return text_op(op);
  }
}

// Strings and bytes: the length, then that many bytes.
bool Reader::text_op(unsigned char op) {
  switch (op) {
    case kShortBinUnicode:
    case kShortBinString:
      push_new(
          Node{.kind = Kind::text, .text = take(little<std::uint8_t>("a string"), "a string")});
      return true;
    case kBinUnicode:
    case kBinString:
      push_new(
          Node{.kind = Kind::text, .text = take(little<std::uint32_t>("a string"), "a string")});
      return true;
    case kBinUnicode8:
      push_new(
          Node{.kind = Kind::text, .text = take(little<std::uint64_t>("a string"), "a string")});
      return true;
    case kShortBinBytes:
      push_new(Node{.kind = Kind::bytes, .text = take(little<std::uint8_t>("bytes"), "bytes")});
      return true;
    case kBinBytes:
      push_new(Node{.kind = Kind::bytes, .text = take(little<std::uint32_t>("bytes"), "bytes")});
      return true;
    case kBinBytes8:
    case kByteArray8:
      push_new(Node{.kind = Kind::bytes, .text = take(little<std::uint64_t>("bytes"), "bytes")});
      return true;
    default:
      return false;
  }
}

bool Reader::container_op(unsigned char op) {
  switch (op) {
    case kEmptyDict:
      push_container(Kind::dict);
      return true;
    case kEmptyList:
      push_container(Kind::list);
      return true;
    case kEmptySet:
      push_container(Kind::list);
      return true;
    case kEmptyTuple:
      push_container(Kind::tuple);
      return true;
    case kMark:
      marks_.push_back(stack_.size());
      return true;
    case kAppend: {
      const std::uint32_t value = pop();
      doc_.containers_[container_under(0, Kind::list, Kind::list, "APPEND").items].push_back(value);
      return true;
    }
    case kAppends:
      extend(pop_mark(), Kind::list, Kind::list, "APPENDS");
      return true;
    case kAddItems:
      extend(pop_mark(), Kind::list, Kind::list, "ADDITEMS");
      return true;
    case kSetItems:
      extend(pop_mark(), Kind::dict, Kind::dict, "SETITEMS");
      return true;
    case kSetItem: {
      const std::uint32_t value = pop();
      const std::uint32_t key = pop();
      auto& items = doc_.containers_[container_under(0, Kind::dict, Kind::dict, "SETITEM").items];
      items.push_back(key);
      items.push_back(value);
      return true;
    }
    default:
      return tuple_op(op);
  }
}

// Tuples (and frozensets, read as lists) built from the values on the stack.
bool Reader::tuple_op(unsigned char op) {
  switch (op) {
    case kTuple:
    case kFrozenSet: {
      const std::size_t mark = pop_mark();
      std::vector<std::uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark),
                                       stack_.end());
      stack_.resize(mark);
      const std::uint32_t id = push_container(op == kTuple ? Kind::tuple : Kind::list);
      doc_.containers_[doc_.nodes_[id].items] = std::move(items);
      return true;
    }
    case kTuple1:
    case kTuple2:
    case kTuple3: {
      const std::size_t count = op - kTuple1 + 1U;
      if (stack_.size() < floor() + count) fail("TUPLE needs more values than the stack holds");
      std::vector<std::uint32_t> items(stack_.end() - static_cast<std::ptrdiff_t>(count),
                                       stack_.end());
      stack_.resize(stack_.size() - count);
      const std::uint32_t id = push_container(Kind::tuple);
      doc_.containers_[doc_.nodes_[id].items] = std::move(items);
      return true;
    }
    default:
      return false;
  }
}

bool Reader::memo_op(unsigned char op) {
  auto put = [&](std::uint64_t index) {
    if (stack_.empty()) fail("a memo entry of nothing");
    if (index > data_.size()) fail("a memo index past any the file could use");
    if (memo_.size() <= index) memo_.resize(index + 1, kUnset);
    memo_[index] = stack_.back();
  };
  auto get = [&](std::uint64_t index) {
    if (index >= memo_.size() || memo_[index] == kUnset)
      fail(fmt::format("memo entry {} was never stored", index));
    stack_.push_back(memo_[index]);
  };
  switch (op) {
    case kMemoize:
      put(memo_.size());
      return true;
    case kBinPut:
      put(little<std::uint8_t>("BINPUT"));
      return true;
    case kLongBinPut:
      put(little<std::uint32_t>("LONG_BINPUT"));
      return true;
    case kBinGet:
      get(little<std::uint8_t>("BINGET"));
      return true;
    case kLongBinGet:
      get(little<std::uint32_t>("LONG_BINGET"));
      return true;
    case kPop:
      (void)pop();
      return true;
    case kPopMark:
      stack_.resize(pop_mark());
      return true;
    case kDup:
      if (stack_.empty()) fail("DUP of nothing");
      stack_.push_back(stack_.back());
      return true;
    case kFrame:
      (void)little<std::uint64_t>("FRAME");
      return true;  // a length hint only
    default:
      return false;
  }
}

void Reader::run() {
  if (data_.empty() || static_cast<unsigned char>(data_[0]) != kProto) {
    fail("not a pickle of protocol 2 or later (it does not start with PROTO)");
  }
  for (;;) {
    poll_();
    at_ = pos_;
    const auto op = static_cast<unsigned char>(take(1, "an opcode")[0]);
    if (op == kProto) {
      const unsigned protocol = little<std::uint8_t>("PROTO");
      if (protocol < 2 || protocol > 5)
        fail(fmt::format("pickle protocol {}: only 2 to 5 are read", protocol));
      continue;
    }
    if (op == kStop) {
      if (stack_.size() != 1 || !marks_.empty())
        fail("STOP with other than one value on the stack");
      doc_.root_ = stack_.back();
      return;
    }
    if (data_op(op) || container_op(op) || memo_op(op)) continue;
    if (const char* name = refused_name(op)) {
      fail(fmt::format("opcode {} (0x{:02x}) would import or build an object or call code: refused",
                       name, op));
    }
    fail(fmt::format("opcode 0x{:02x} is not one a data-only pickle of protocol 2 to 5 uses", op));
  }
}

Document Document::read(std::string buffer, const std::string& name, StopPoll poll) {
  Document doc;
  doc.buffer_ = std::make_unique<const std::string>(std::move(buffer));
  doc.nodes_.reserve(doc.buffer_->size() / 8);
  Reader(doc, name, std::move(poll)).run();
  return doc;
}

const Node* Document::get(const Node& dict, std::string_view key) const {
  if (dict.kind != Kind::dict) return nullptr;
  const auto pairs = items(dict);
  for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const Node& k = nodes_[pairs[i]];
    if (k.kind == Kind::text && k.text == key) return &nodes_[pairs[i + 1]];
  }
  return nullptr;
}

}  // namespace oomlab::trace::pickle
