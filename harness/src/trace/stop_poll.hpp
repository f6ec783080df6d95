// What a trace reader calls as it goes (per row, opcode, entry, block of bytes read): every so
// often it asks the run whether it should stop, so that a Ctrl-C or a --timeout during the load
// of a large trace is honoured at once. The check throws (Interrupted, TimedOut) to stop it.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

namespace oomlab::trace {

class StopPoll {
 public:
  StopPoll() = default;  // never stops
  explicit StopPoll(std::function<void()> check) : check_(std::move(check)) {}

  // Cheap enough for every row: the check itself runs on the first call and then once in
  // kEvery (a few thousand rows or opcodes: well under a millisecond of reading).
  void operator()() {
    if (check_ && count_++ % kEvery == 0) check_();
  }
  // Now, whatever the count: before and after a step that takes a while on its own.
  void now() const {
    if (check_) check_();
  }

 private:
  static constexpr std::uint32_t kEvery = 4096;
  std::function<void()> check_;
  std::uint32_t count_ = 0;
};

}  // namespace oomlab::trace
