// The opcodes a snapshot seldom uses: None, booleans, long integers, floats, strings and bytes,
// lists, sets and tuples, memo stores and stack shuffles, and those that are refused by name.
#include "pytorch/trace/pickle_opcodes.hpp"
#include "pytorch/trace/pickle_reader.hpp"

namespace oomlab::torch::pickle {

using namespace oomlab::trace;  // the engine's trace types, which it works in

void Reader::other_op(unsigned char op) {
  if (op == kProto) {
    const unsigned protocol = little<std::uint8_t>("PROTO");
    if (protocol < 2 || protocol > 5)
      fail(fmt::format("pickle protocol {}: only 2 to 5 are read", protocol));
    return;
  }
  if (data_op(op) || container_op(op) || memo_op(op)) return;
  if (const char* name = refused_name(op)) {
    fail(fmt::format("opcode {} (0x{:02x}) would import or build an object or call code: refused",
                     name, op));
  }
  fail(fmt::format("opcode 0x{:02x} is not one a data-only pickle of protocol 2 to 5 uses", op));
}

bool Reader::data_op(unsigned char op) {
  switch (op) {
    case kNone:
      push_new(Kind::none, 0);
      return true;
    case kNewTrue:
      push_new(Kind::boolean, 1);
      return true;
    case kNewFalse:
      push_new(Kind::boolean, 0);
      return true;
    case kBinInt2:
      push_integer(little<std::uint16_t>("BININT2"));
      return true;
    case kLong4:
      integer(take(little<std::uint32_t>("LONG4"), "LONG4"));
      return true;
    case kBinFloat: {
      const std::string_view bytes = take(8, "BINFLOAT");
      std::uint64_t bits = 0;
      for (const char c : bytes)
        bits = (bits << 8U) | static_cast<unsigned char>(c);  // big-endian
      push_new(Kind::real, bits);
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
      push_text(Kind::text, little<std::uint8_t>("a string"), "a string");
      return true;
    case kBinUnicode:
    case kBinString:
      push_text(Kind::text, little<std::uint32_t>("a string"), "a string");
      return true;
    case kBinUnicode8:
      push_text(Kind::text, little<std::uint64_t>("a string"), "a string");
      return true;
    case kShortBinBytes:
      push_text(Kind::bytes, little<std::uint8_t>("bytes"), "bytes");
      return true;
    case kBinBytes:
      push_text(Kind::bytes, little<std::uint32_t>("bytes"), "bytes");
      return true;
    case kBinBytes8:
    case kByteArray8:
      push_text(Kind::bytes, little<std::uint64_t>("bytes"), "bytes");
      return true;
    default:
      return false;
  }
}

// Lists, sets and tuples (dicts are run()'s); frozensets are read as lists.
bool Reader::container_op(unsigned char op) {
  switch (op) {
    case kEmptyList:
    case kEmptySet:
      push_container(Kind::list);
      return true;
    case kEmptyTuple:
      push_container(Kind::tuple);
      return true;
    case kAppend: {
      const std::uint32_t value = pop();
      const std::uint32_t list = container_under(0, Kind::list, "APPEND");
      stack_.push_back(value);
      append(list, stack_.size() - 1);
      return true;
    }
    case kAppends:
      extend(pop_mark(), Kind::list, "APPENDS");
      return true;
    case kAddItems:
      extend(pop_mark(), Kind::list, "ADDITEMS");
      return true;
    case kSetItem: {
      const std::uint32_t value = pop();
      const std::uint32_t key = pop();
      const std::uint32_t dict = container_under(0, Kind::dict, "SETITEM");
      stack_.push_back(key);
      stack_.push_back(value);
      append(dict, stack_.size() - 2);
      return true;
    }
    case kTuple:
    case kFrozenSet:
      push_container(op == kTuple ? Kind::tuple : Kind::list, stack_.size() - pop_mark());
      return true;
    case kTuple1:
    case kTuple2:
    case kTuple3: {
      const std::size_t count = op - kTuple1 + 1U;
      if (stack_.size() < floor() + count) fail("TUPLE needs more values than the stack holds");
      push_container(Kind::tuple, count);
      return true;
    }
    default:
      return false;
  }
}

bool Reader::memo_op(unsigned char op) {
  switch (op) {
    case kBinPut:
      memoize(little<std::uint8_t>("BINPUT"));
      return true;
    case kLongBinPut:
      memoize(little<std::uint32_t>("LONG_BINPUT"));
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

}  // namespace oomlab::torch::pickle
