// The opcodes a snapshot is made of (memo fetches, integers, dicts), the containers' runs of
// items, and the Document.
#include <algorithm>

#include "pytorch/trace/pickle_opcodes.hpp"
#include "pytorch/trace/pickle_reader.hpp"

namespace oomlab::torch::pickle {

using namespace oomlab::trace;  // the engine's trace types, which it works in

void Reader::run() {
  if (data_.empty() || static_cast<unsigned char>(data_[0]) != kProto) {
    fail("not a pickle of protocol 2 or later (it does not start with PROTO)");
  }
  last_run_.reserve(doc_.runs_.capacity());
  for (;;) {  // the opcodes a snapshot is made of first, in one switch
    poll_();
    at_ = pos_;
    const auto op = static_cast<unsigned char>(take(1, "an opcode")[0]);
    switch (op) {
      case kLongBinGet:
        fetch(little<std::uint32_t>("LONG_BINGET"));
        break;
      case kBinGet:
        fetch(little<std::uint8_t>("BINGET"));
        break;
      case kMemoize:
        memoize(memo_.size());
        break;
      case kLong1:
        integer(take(little<std::uint8_t>("LONG1"), "LONG1"));
        break;
      case kBinInt1:
        push_integer(little<std::uint8_t>("BININT1"));
        break;
      case kBinInt:
        push_integer(static_cast<std::int32_t>(little<std::uint32_t>("BININT")));
        break;
      case kMark:
        marks_.push_back(stack_.size());
        break;
      case kEmptyDict:
        push_container(Kind::dict);
        break;
      case kSetItems:
        extend(pop_mark(), Kind::dict, "SETITEMS");
        break;
      case kStop:
        if (stack_.size() != 1 || !marks_.empty())
          fail("STOP with other than one value on the stack");
        finish();
        return;
      default:
        other_op(op);
    }
  }
}

void Reader::push_container(Kind kind, std::size_t count) {
  if (doc_.runs_.size() >= Document::kNoRun) fail("too many objects");
  const auto id = static_cast<std::uint32_t>(doc_.runs_.size());
  doc_.runs_.push_back(Run{.begin = doc_.items_.size()});
  last_run_.push_back(Document::kNoRun);
  append(id, stack_.size() - count);
  push_new(kind, id);
}

// Moves stack[from..] to the end of a container's items: onto its last run when that run ends
// the items array (a container filled before the next one is), else onto a new run of its chain.
void Reader::append(std::uint32_t container, std::size_t from) {
  const std::size_t count = stack_.size() - from;
  if (count == 0) return;
  auto& runs = doc_.runs_;
  auto& items = doc_.items_;
  std::uint32_t last = last_run_[container] == Document::kNoRun ? container : last_run_[container];
  if (runs[last].count == 0) {
    runs[last].begin = items.size();
  } else if (runs[last].begin + runs[last].count != items.size()) {
    if (runs.size() >= Document::kNoRun) fail("too many objects");
    const auto next = static_cast<std::uint32_t>(runs.size());
    runs.push_back(Run{.begin = items.size()});
    last_run_.push_back(Document::kNoRun);
    runs[last].next = next;
    last_run_[container] = last = next;
  }
  if (count > std::numeric_limits<std::uint32_t>::max() - runs[last].count)
    fail("a container of 4G items or more");
  items.insert(items.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
  runs[last].count += static_cast<std::uint32_t>(count);
  stack_.resize(from);
}

// Each container read in several batches becomes one run, at the end of the items.
void Reader::finish() {
  auto& runs = doc_.runs_;
  auto& items = doc_.items_;
  for (std::size_t head = 0; head < last_run_.size(); ++head) {
    if (last_run_[head] == Document::kNoRun) continue;
    std::uint64_t total = 0;
    for (auto r = static_cast<std::uint32_t>(head); r != Document::kNoRun; r = runs[r].next)
      total += runs[r].count;
    if (total > std::numeric_limits<std::uint32_t>::max()) fail("a container of 4G items or more");
    const std::size_t begin = items.size();
    items.resize(begin + total);
    std::size_t to = begin;
    for (auto r = static_cast<std::uint32_t>(head); r != Document::kNoRun; r = runs[r].next) {
      std::copy_n(items.begin() + static_cast<std::ptrdiff_t>(runs[r].begin), runs[r].count,
                  items.begin() + static_cast<std::ptrdiff_t>(to));
      to += runs[r].count;
    }
    runs[head] = Run{.begin = begin, .count = static_cast<std::uint32_t>(total)};
  }
  doc_.root_ = stack_.back();
}

std::uint32_t Reader::container_under(std::size_t depth, Kind kind, const char* op) {
  if (stack_.size() < depth + 1) fail(fmt::format("{} has no container to add to", op));
  const Node& target = doc_.nodes_[stack_[stack_.size() - depth - 1]];
  if (target.kind != kind) fail(fmt::format("{} adds to something that is not a container", op));
  return static_cast<std::uint32_t>(target.value);
}

// Moves stack[mark..] into the container just below the mark.
void Reader::extend(std::size_t mark, Kind kind, const char* op) {
  if (mark == 0) fail(fmt::format("{} has no container to add to", op));
  const Node& target = doc_.nodes_[stack_[mark - 1]];
  if (target.kind != kind) fail(fmt::format("{} adds to something that is not a container", op));
  if (kind == Kind::dict && (stack_.size() - mark) % 2 != 0)
    fail("SETITEMS with a key and no value");
  append(static_cast<std::uint32_t>(target.value), mark);
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
  push_new(Kind::integer, value);
}

Document Document::read(std::string buffer, const std::string& name, StopPoll poll) {
  auto owner = std::make_shared<const std::string>(std::move(buffer));
  const std::string_view bytes = *owner;
  return read(std::move(owner), bytes, name, std::move(poll));
}

Document Document::read(LargeArray<char> buffer, const std::string& name, StopPoll poll) {
  auto owner = std::make_shared<const LargeArray<char>>(std::move(buffer));
  const std::string_view bytes(owner->data(), owner->size());
  return read(std::move(owner), bytes, name, std::move(poll));
}

Document Document::read(std::shared_ptr<const void> owner, std::string_view bytes,
                        const std::string& name, StopPoll poll) {
  Document doc;
  doc.owner_ = std::move(owner);
  doc.bytes_ = bytes;
  // Room for a snapshot's shape (a value every ~14 bytes, a container every ~70): reserved,
  // not touched, so a smaller pickle costs no more pages than it fills.
  doc.nodes_.reserve(bytes.size() / 8);
  doc.items_.reserve(bytes.size() / 4);
  doc.runs_.reserve(bytes.size() / 32);
  Reader(doc, bytes, name, std::move(poll)).run();
  return doc;
}

std::uint64_t Document::offset(const Node& node) const {
  Document again;
  std::vector<std::uint64_t> offsets;
  offsets.reserve(nodes_.size());
  Reader(again, bytes_, {}, {}, &offsets).run();  // the same bytes: the same nodes, in order
  return offsets.at(static_cast<std::size_t>(&node - nodes_.data()));
}

const Node* Document::get(const Node& dict, std::string_view key) const {
  if (dict.kind != Kind::dict) return nullptr;
  const auto pairs = items(dict);
  for (std::size_t i = 0; i + 1 < pairs.size(); i += 2) {
    const Node& k = nodes_[pairs[i]];
    if (k.kind != Kind::text || k.size != key.size()) continue;
    const std::string_view candidate = text(k);  // most keys differ in their first letter
    if (!key.empty() && candidate[0] != key[0]) continue;
    if (candidate == key) return &nodes_[pairs[i + 1]];
  }
  return nullptr;
}

}  // namespace oomlab::torch::pickle
