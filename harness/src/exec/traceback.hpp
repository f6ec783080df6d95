// A Python traceback read from a program's output, line by line: the frames of the last
// "Traceback (most recent call last):" block, so that an OOM the program raised names the line
// of the user's code it came from even when no snapshot recorded stacks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace oomlab {

// One frame as traces hold them, "name (file:line)", and the code line Python printed under it.
struct TracebackFrame {
  std::string frame;
  std::string code;
  bool operator==(const TracebackFrame&) const = default;
};

class TracebackReader {
 public:
  // One line of output (stdout and stderr interleaved; a torchrun rank mark such as "[rank1]:"
  // or "[default0]:" before it is read past).
  void feed(std::string_view line);
  // The frames of the last traceback whose exception line has come, innermost first.
  [[nodiscard]] const std::vector<TracebackFrame>& last() const { return last_; }

 private:
  bool reading_ = false;
  std::vector<TracebackFrame> block_;  // outermost first, as Python prints them
  std::vector<TracebackFrame> last_;
};

}  // namespace oomlab
