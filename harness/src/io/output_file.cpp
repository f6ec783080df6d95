#include "io/output_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <system_error>

#include "oomlab/error.hpp"

namespace oomlab {

namespace fs = std::filesystem;

namespace {

std::string reason(int error) {
  return std::generic_category().message(error);
}

// Beside the target, hidden, unique in this process and among processes.
fs::path temporary_beside(const fs::path& target) {
  static std::atomic<unsigned> counter{0};
  constexpr std::size_t kNameKept = 200;  // the whole name stays under NAME_MAX
  const std::string name = target.filename().string().substr(0, kNameKept);
  return target.parent_path() / fmt::format(".{}.{}.{}.partial", name, ::getpid(), counter++);
}

}  // namespace

OutputFile::OutputFile(fs::path path) : path_(std::move(path)), target_(path_) {
  std::error_code ec;
  if (fs::is_symlink(path_, ec)) {  // write through the link, keep the link
    const fs::path resolved = fs::weakly_canonical(path_, ec);
    if (!ec) target_ = resolved;
  }
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) fail(EISDIR);
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd_ < 0) fail(errno);
    return;
  }
  if (target_.has_parent_path()) {
    fs::create_directories(target_.parent_path(), ec);
    if (ec) {
      throw Error(ErrorKind::io,
                  fmt::format("cannot write {}: cannot create folder {}: {}", path_.string(),
                              target_.parent_path().string(), ec.message()));
    }
  }
  fs::path temp = temporary_beside(target_);
  fd_ = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) fail(errno);
  temp_ = std::move(temp);
}

OutputFile::~OutputFile() {
  abandon();
}

void OutputFile::write(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

void OutputFile::commit() {
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail(errno);  // where NFS and quotas report a full disk
  if (!temp_.empty() && ::rename(temp_.c_str(), target_.c_str()) != 0) fail(errno);
  committed_ = true;
}

void OutputFile::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty() && !committed_) ::unlink(temp_.c_str());
}

void OutputFile::fail(int error) {
  abandon();
  throw Error(ErrorKind::io, fmt::format("cannot write {}: {}", path_.string(), reason(error)));
}

void write_output_file(const fs::path& path, std::string_view text) {
  OutputFile file(path);
  file.write(text);
  file.commit();
}

void copy_output_file(const fs::path& from, const fs::path& to) {
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    throw Error(ErrorKind::io, fmt::format("cannot read {}: {}", from.string(), reason(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } const closer{in};
  OutputFile out(to);
  std::array<char, 1U << 16U> buffer{};
  for (;;) {
    const ssize_t n = ::read(in, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorKind::io, fmt::format("cannot read {}: {}", from.string(), reason(errno)));
    }
    out.write(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }
  out.commit();
}

}  // namespace oomlab
