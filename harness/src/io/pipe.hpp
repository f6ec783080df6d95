// A pipe whose two ends are closed with it, both close-on-exec: what oomlab reads a child's
// output through (matrix cells, exec's program) and what exec's guardian watches.
#pragma once

#include <array>

namespace oomlab {

class Pipe {
 public:
  Pipe();  // throws Error(io) when the system refuses one
  ~Pipe();
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  Pipe(Pipe&&) = delete;
  Pipe& operator=(Pipe&&) = delete;
  [[nodiscard]] int read_end() const { return fds_[0]; }
  [[nodiscard]] int write_end() const { return fds_[1]; }
  void close_read();
  void close_write();

 private:
  std::array<int, 2> fds_{-1, -1};
};

}  // namespace oomlab
