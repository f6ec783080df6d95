#include "record/csv_sink.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstring>

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

// One row, written with std::to_chars: about four times faster than a format string, which keeps
// the writer thread ahead of the fastest backends. Returns the end of the row in `row`, which
// must hold kRowBytes + the phase's text.
constexpr std::size_t kRowBytes = 11 * 20 + 2 * 2 + 16 + 16 + 16;

char* put(char* p, std::uint64_t value) {
  return std::to_chars(p, p + 20, value).ptr;
}
char* put_hex(char* p, std::uint64_t value) {
  *p++ = '0';
  *p++ = 'x';
  return std::to_chars(p, p + 16, value, 16).ptr;
}
char* put(char* p, std::string_view text) {
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

char* write_row(char* p, std::uint64_t seq, const Event& e, std::string_view phase) {
  p = put(p, seq);
  *p++ = ',';
  p = put(p, e.t_ns);
  *p++ = ',';
  p = put(p, e.step);
  *p++ = ',';
  p = put(p, phase);
  *p++ = ',';
  p = put(p, to_string(e.op));
  *p++ = ',';
  p = put(p, e.bytes);
  *p++ = ',';
  p = put_hex(p, e.ptr);
  *p++ = ',';
  p = put_hex(p, e.stream);
  *p++ = ',';
  p = put(p, std::uint64_t{e.thread});
  *p++ = ',';
  p = put(p, to_string(e.status));
  *p++ = ',';
  p = put(p, e.live_bytes);
  *p++ = ',';
  p = put(p, e.reserved_bytes);
  *p++ = '\n';
  return p;
}
}  // namespace

CsvFileSink::CsvFileSink(const std::filesystem::path& path, const PhaseTable& phases)
    : phases_(phases), file_(path) {
  buffer_.reserve(kFlushBytes + 4096);
  row_.resize(kRowBytes);
  buffer_.append(kEventsCsvHeader);
  buffer_.push_back('\n');
}

void CsvFileSink::write(std::uint64_t first_seq, std::span<const Event> events) {
  std::uint64_t seq = first_seq;
  for (const Event& e : events) {
    if (e.phase != cached_phase_) {
      cached_phase_ = e.phase;
      cached_phase_text_ = csv_field(phases_.name(e.phase));
      row_.resize(kRowBytes + cached_phase_text_.size());
    }
    const char* end = write_row(row_.data(), seq++, e, cached_phase_text_);
    buffer_.append(row_.data(), static_cast<std::size_t>(end - row_.data()));
    if (buffer_.size() >= kFlushBytes) flush_buffer();
  }
}

void CsvFileSink::flush_buffer() {
  if (buffer_.empty()) return;
  file_.write(buffer_);
  buffer_.clear();
}

void CsvFileSink::finish() {
  flush_buffer();
  file_.commit();
}

}  // namespace oomlab
