// Writes events as events.csv (the contract of docs/outputs.md), on the event log's writer thread:
// into a temporary file renamed to events.csv when the run ends (io/output_file.hpp).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "io/output_file.hpp"
#include "record/event_log.hpp"
#include "record/formats.hpp"
#include "record/phase_table.hpp"

namespace oomlab {

class CsvFileSink final : public EventSink {
 public:
  // Throws Error(io) when the file cannot be created.
  CsvFileSink(const std::filesystem::path& path, const PhaseTable& phases);
  ~CsvFileSink() override = default;
  CsvFileSink(const CsvFileSink&) = delete;
  CsvFileSink& operator=(const CsvFileSink&) = delete;
  CsvFileSink(CsvFileSink&&) = delete;
  CsvFileSink& operator=(CsvFileSink&&) = delete;

  void write(std::uint64_t first_seq, std::span<const Event> events) override;
  void finish() override;

 private:
  void flush_buffer();

  const PhaseTable& phases_;
  OutputFile file_;
  std::string buffer_;
  std::vector<char> row_;  // one row, sized for the current phase's text
  std::uint32_t cached_phase_ = UINT32_MAX;
  std::string cached_phase_text_;
};

}  // namespace oomlab
