#include "record/csv_sink.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <iterator>
#include <system_error>

#include "oomlab/error.hpp"

namespace oomlab {

namespace {
constexpr std::size_t kFlushBytes = 1U << 20U;

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}
}  // namespace

CsvFileSink::CsvFileSink(const std::filesystem::path& path, const PhaseTable& phases)
    : path_(path), phases_(phases), file_(std::fopen(path.c_str(), "wb")) {
  if (file_ == nullptr) {
    throw Error(ErrorKind::usage, fmt::format("cannot write events to {}: {}", path.string(),
                                              std::generic_category().message(errno)));
  }
  buffer_.reserve(kFlushBytes + 4096);
  buffer_.append(kEventsCsvHeader);
  buffer_.push_back('\n');
}

CsvFileSink::~CsvFileSink() {
  if (file_ != nullptr) std::fclose(file_);
}

void CsvFileSink::write(std::uint64_t first_seq, std::span<const Event> events) {
  auto out = std::back_inserter(buffer_);
  std::uint64_t seq = first_seq;
  for (const Event& e : events) {
    if (e.phase != cached_phase_) {
      cached_phase_ = e.phase;
      cached_phase_text_ = csv_field(phases_.name(e.phase));
    }
    fmt::format_to(out, "{},{},{},{},{},{},{:#x},{:#x},{},{},{},{}\n", seq++, e.t_ns, e.step,
                   cached_phase_text_, to_string(e.op), e.bytes, e.ptr, e.stream, e.thread,
                   to_string(e.status), e.live_bytes, e.reserved_bytes);
    if (buffer_.size() >= kFlushBytes) flush_buffer();
  }
}

void CsvFileSink::flush_buffer() {
  if (buffer_.empty()) return;
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    throw Error(ErrorKind::io, fmt::format("writing {} failed: {}", path_.string(),
                                           std::generic_category().message(errno)));
  }
  buffer_.clear();
}

void CsvFileSink::finish() {
  flush_buffer();
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) {
    throw Error(ErrorKind::io, fmt::format("writing {} failed: {}", path_.string(),
                                           std::generic_category().message(errno)));
  }
}

}  // namespace oomlab
