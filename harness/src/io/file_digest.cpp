#include "io/file_digest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stop_token>
#include <system_error>
#include <vector>

#include "io/sha256_blocks.hpp"
#include "oomlab/error.hpp"

namespace oomlab {

namespace {

// SHA-256 as FIPS 180-4 defines it, fed in pieces: whole blocks go to the compression function
// straight from the input, the rest waits in `block_`.
class Sha256 {
 public:
  explicit Sha256(bool native = sha256::has_native())
      : blocks_(native ? sha256::blocks_native : sha256::blocks_portable) {}

  void update(std::string_view bytes) {
    length_ += bytes.size();
    const auto* in = reinterpret_cast<const std::uint8_t*>(bytes.data());
    std::size_t left = bytes.size();
    if (used_ > 0) {
      const std::size_t take = std::min(left, block_.size() - used_);
      std::memcpy(block_.data() + used_, in, take);
      used_ += take;
      in += take;
      left -= take;
      if (used_ < block_.size()) return;
      blocks_(state_, block_.data(), 1);
      used_ = 0;
    }
    blocks_(state_, in, left / 64);
    std::memcpy(block_.data(), in + left / 64 * 64, left % 64);
    used_ = left % 64;
  }

  std::string hex() {
    const std::uint64_t bits = length_ * 8;
    block_[used_++] = 0x80;
    if (used_ > 56) {
      std::fill(block_.begin() + static_cast<std::ptrdiff_t>(used_), block_.end(), 0);
      blocks_(state_, block_.data(), 1);
      used_ = 0;
    }
    std::fill(block_.begin() + static_cast<std::ptrdiff_t>(used_), block_.begin() + 56, 0);
    for (int i = 0; i < 8; ++i)
      block_[56 + i] = static_cast<std::uint8_t>(bits >> (8U * static_cast<unsigned>(7 - i)));
    blocks_(state_, block_.data(), 1);
    std::string out;
    for (const std::uint32_t word : state_)
      out += fmt::format("{:08x}", word);
    return out;
  }

 private:
  void (*blocks_)(sha256::State&, const std::uint8_t*, std::size_t);
  sha256::State state_ = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<std::uint8_t, 64> block_{};
  std::size_t used_ = 0;
  std::uint64_t length_ = 0;
};

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  Sha256 sha;
  sha.update(bytes);
  return sha.hex();
}

std::string sha256_hex_portable(std::string_view bytes) {
  Sha256 sha(false);
  sha.update(bytes);
  return sha.hex();
}

namespace {

std::ifstream open_for_digest(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(ErrorKind::input, fmt::format("{}: cannot read: {}", path.string(),
                                              std::generic_category().message(errno)));
  }
  return in;
}

// The digest of what `in` has left, or nothing when `stop` was asked for first.
std::string digest_of(std::ifstream& in, const std::filesystem::path& path,
                      const std::stop_token& stop = {}) {
  Sha256 sha;
  std::vector<char> buffer(1U << 20U);
  while (in && !stop.stop_requested()) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    sha.update(std::string_view(buffer.data(), static_cast<std::size_t>(in.gcount())));
  }
  if (in.bad()) throw Error(ErrorKind::input, fmt::format("{}: cannot read", path.string()));
  return "sha256:" + sha.hex();
}

struct OpenedFile {
  std::string name;
  std::filesystem::path path;
  std::ifstream in;
};

// The text parameters whose values name regular files, each opened.
std::vector<OpenedFile> open_named_files(const ParamSpec& spec, const Params& params) {
  std::vector<OpenedFile> files;
  for (const ParamDef& def : spec) {
    if (def.type != ParamType::text) continue;
    const std::string& value = params.text(def.name);
    std::error_code ec;
    if (!value.empty() && std::filesystem::is_regular_file(value, ec))
      files.push_back({def.name, value, open_for_digest(value)});
  }
  return files;
}

}  // namespace

std::string file_digest(const std::filesystem::path& path) {
  std::ifstream in = open_for_digest(path);
  return digest_of(in, path);
}

std::map<std::string, std::string> file_digests(const ParamSpec& spec, const Params& params) {
  std::map<std::string, std::string> digests;
  for (OpenedFile& file : open_named_files(spec, params))
    digests.emplace(file.name, digest_of(file.in, file.path));
  return digests;
}

FileDigests::FileDigests(const ParamSpec& spec, const Params& params) {
  std::vector<OpenedFile> files = open_named_files(spec, params);
  if (files.empty()) return;
  worker_ = std::jthread([this, files = std::move(files)](const std::stop_token& stop) mutable {
    try {
      for (OpenedFile& file : files)
        digests_.emplace(file.name, digest_of(file.in, file.path, stop));
    } catch (...) {
      failed_ = std::current_exception();
    }
  });
}

FileDigests::~FileDigests() = default;  // the jthread asks its hashing to stop, and joins it

std::map<std::string, std::string> FileDigests::get() {
  const std::lock_guard lock(mutex_);
  if (worker_.joinable()) worker_.join();
  if (failed_) std::rethrow_exception(failed_);
  return digests_;
}

}  // namespace oomlab
