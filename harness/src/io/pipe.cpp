#include "io/pipe.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "oomlab/error.hpp"

namespace oomlab {

Pipe::Pipe() {
  if (pipe2(fds_.data(), O_CLOEXEC) != 0)
    throw Error(ErrorKind::io,
                fmt::format("cannot create a pipe: {}", std::generic_category().message(errno)));
}

Pipe::~Pipe() {
  close_read();
  close_write();
}

void Pipe::close_read() {
  if (fds_[0] >= 0) ::close(fds_[0]);
  fds_[0] = -1;
}

void Pipe::close_write() {
  if (fds_[1] >= 0) ::close(fds_[1]);
  fds_[1] = -1;
}

}  // namespace oomlab
