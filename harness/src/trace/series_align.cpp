#include "trace/series_align.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace oomlab::trace {

namespace {

constexpr std::uint64_t kMix = 0x9E3779B97F4A7C15ULL;
constexpr std::uint64_t kTinyBytes = 4096;  // under a page: a scalar, a norm's statistics
constexpr std::uint64_t kImplausibleGrowth = 16;

std::uint64_t mix(std::uint64_t seed, std::uint64_t value) {
  seed ^= value + kMix + (seed << 6U) + (seed >> 2U);
  return seed;
}

std::uint64_t frames_hash(const std::vector<std::string>& frames) {
  std::uint64_t h = frames.size();
  for (const std::string& f : frames)
    h = mix(h, std::hash<std::string>{}(f));
  return h;
}

}  // namespace

std::vector<std::uint64_t> request_keys(const Trace& trace, bool tell_tiny, bool by_stream) {
  std::vector<std::uint64_t> keys(trace.events.size(), 0);
  std::vector<std::uint64_t> slot_key(trace.slots, 0);
  std::unordered_map<std::uint32_t, std::uint64_t> stack_hash;
  const RecordedState* recorded = trace.recorded ? &*trace.recorded : nullptr;
  const auto frames_key = [&](std::uint32_t position) -> std::uint64_t {
    if (recorded == nullptr || position >= recorded->event_stacks.size()) return 0;
    const std::uint32_t stack = recorded->event_stacks[position];
    if (stack == Event::kNone || stack >= recorded->stacks.size()) return 0;
    const auto [it, fresh] = stack_hash.try_emplace(stack, 0);
    if (fresh) it->second = frames_hash(recorded->stacks[stack]);
    return it->second;
  };
  // An allocation freed by the very next event (a workspace, used and given back at once) is
  // told apart from one that lives on, with frames or without (autograd's backward thread
  // records none): that does not change with the value where sizes do. With `tell_tiny`, so is
  // a tiny request from a tensor (see implausible_pairs).
  EventReader events(trace.events);
  // The event after each (by_stream: the next of its own stream; none: past the end).
  const auto n = static_cast<std::uint32_t>(trace.events.size());
  std::vector<std::uint32_t> after(n, n);
  if (by_stream) {
    std::vector<std::uint32_t> next_of(trace.streams.size() + 1, n);
    for (std::uint32_t i = n; i-- > 0;) {
      const std::uint32_t s = std::min<std::uint32_t>(events[i].stream, trace.streams.size());
      after[i] = next_of[s];
      next_of[s] = i;
    }
  } else {
    for (std::uint32_t i = 0; i + 1 < n; ++i)
      after[i] = i + 1;
  }
  const auto freed_next = [&](std::uint32_t i, const Event& e) {
    if (e.slot == Event::kNone || after[i] >= n) return false;
    const Event& next = events[after[i]];
    return next.op == Op::free && next.slot == e.slot;
  };
  for (std::uint32_t i = 0; i < trace.events.size(); ++i) {
    const Event e = events[i];
    if (e.op == Op::failed) {
      keys[i] = mix(mix(3, e.stream), frames_key(i)) | 1U;
      continue;
    }
    if (e.op == Op::alloc) {
      const std::uint64_t frames = frames_key(i);
      const std::uint64_t kind = (e.preexisting ? 1U : 0U) | (freed_next(i, e) ? 2U : 0U) |
                                 (tell_tiny && e.bytes < kTinyBytes ? 4U : 0U);
      keys[i] = mix(mix(mix(1, e.stream), frames), kind) | 1U;
      if (e.slot != Event::kNone && e.slot < slot_key.size()) slot_key[e.slot] = keys[i];
    } else {
      const std::uint64_t freed =
          e.slot != Event::kNone && e.slot < slot_key.size() ? slot_key[e.slot] : 0;
      keys[i] = mix(mix(2, e.stream), freed) | 1U;
    }
  }
  return keys;
}

namespace {

// Myers' greedy shortest edit, keeping each round's furthest reaches (the diagonals -d-1..d+1)
// to walk back from the end.
class ShortestEdit {
 public:
  ShortestEdit(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b,
               std::size_t a0, std::size_t b0, std::size_t n, std::size_t m)
      : a_(a), b_(b), a0_(a0), b0_(b0), n_(static_cast<long>(n)), m_(static_cast<long>(m)) {}

  // Whether the end was reached within `most` edits.
  bool run(long most) {
    std::vector<long> v(2 * static_cast<std::size_t>(most) + 3, 0);
    const long off = most + 1;
    for (long d = 0; d <= most; ++d) {
      rounds_.emplace_back(v.begin() + (off - d - 1), v.begin() + (off + d + 2));
      for (long k = -d; k <= d; k += 2) {
        long x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1]
                                                                          : v[off + k - 1] + 1;
        long y = x - k;
        while (x < n_ && y < m_ && same(x, y)) {
          ++x;
          ++y;
        }
        v[off + k] = x;
        if (x >= n_ && y >= m_) return true;
      }
    }
    return false;
  }

  // Writes b's matches (positions of a) into `out`.
  void walk_back(std::vector<std::uint32_t>& out) const {
    long x = n_;
    long y = m_;
    for (long d = static_cast<long>(rounds_.size()) - 1; d >= 0; --d) {
      const std::vector<long>& v = rounds_[static_cast<std::size_t>(d)];
      const auto at = [&](long k) { return v[static_cast<std::size_t>(k + d + 1)]; };
      const long k = x - y;
      const long prev_k = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
      const long prev_x = at(prev_k);
      const long prev_y = prev_x - prev_k;
      while (x > prev_x && y > prev_y) {
        --x;
        --y;
        out[b0_ + static_cast<std::size_t>(y)] = static_cast<std::uint32_t>(a0_ + x);
      }
      if (d > 0) {
        x = prev_x;
        y = prev_y;
      }
    }
  }

 private:
  [[nodiscard]] bool same(long x, long y) const {
    return a_[a0_ + static_cast<std::size_t>(x)] == b_[b0_ + static_cast<std::size_t>(y)];
  }

  const std::vector<std::uint64_t>& a_;
  const std::vector<std::uint64_t>& b_;
  std::size_t a0_, b0_;
  long n_, m_;
  std::vector<std::vector<long>> rounds_;
};

}  // namespace

std::optional<std::vector<std::uint32_t>> align_keys(const std::vector<std::uint64_t>& other,
                                                     const std::vector<std::uint64_t>& anchor,
                                                     std::uint32_t most_edits) {
  std::vector<std::uint32_t> out(anchor.size(), Event::kNone);
  // The common head and tail first: most of a program's sequence, matched without the search.
  std::size_t head = 0;
  while (head < other.size() && head < anchor.size() && other[head] == anchor[head]) {
    out[head] = static_cast<std::uint32_t>(head);
    ++head;
  }
  std::size_t tail = 0;
  while (tail < other.size() - head && tail < anchor.size() - head &&
         other[other.size() - 1 - tail] == anchor[anchor.size() - 1 - tail]) {
    out[anchor.size() - 1 - tail] = static_cast<std::uint32_t>(other.size() - 1 - tail);
    ++tail;
  }
  ShortestEdit edit(other, anchor, head, head, other.size() - head - tail,
                    anchor.size() - head - tail);
  if (!edit.run(most_edits)) return std::nullopt;
  edit.walk_back(out);
  return out;
}

std::uint64_t implausible_pairs(const Trace& other, const Trace& anchor,
                                const std::vector<std::uint32_t>& match) {
  EventReader theirs(other.events);
  EventReader ours(anchor.events);
  std::uint64_t out = 0;
  for (std::uint32_t p = 0; p < match.size() && p < anchor.events.size(); ++p) {
    if (match[p] == Event::kNone || match[p] >= other.events.size()) continue;
    const Event& a = ours[p];
    if (a.op == Op::free) continue;
    const std::uint64_t b = theirs[match[p]].bytes;
    const std::uint64_t least = std::min(a.bytes, b);
    const std::uint64_t most = std::max(a.bytes, b);
    if (least < kTinyBytes && most >= kTinyBytes * kImplausibleGrowth) ++out;
  }
  return out;
}

}  // namespace oomlab::trace
