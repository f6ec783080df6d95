// Writes events as events.csv (the DESIGN.md contract), on the event log's writer thread.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "record/event_log.hpp"
#include "record/formats.hpp"
#include "record/phase_table.hpp"

namespace oomlab {

class CsvFileSink final : public EventSink {
 public:
  // Throws Error(usage) when the file cannot be created.
  CsvFileSink(const std::filesystem::path& path, const PhaseTable& phases);
  ~CsvFileSink() override;
  CsvFileSink(const CsvFileSink&) = delete;
  CsvFileSink& operator=(const CsvFileSink&) = delete;
  CsvFileSink(CsvFileSink&&) = delete;
  CsvFileSink& operator=(CsvFileSink&&) = delete;

  void write(std::uint64_t first_seq, std::span<const Event> events) override;
  void finish() override;

 private:
  void flush_buffer();

  std::filesystem::path path_;
  const PhaseTable& phases_;
  std::FILE* file_ = nullptr;
  std::string buffer_;
  std::vector<char> row_;  // one row, sized for the current phase's text
  std::uint32_t cached_phase_ = UINT32_MAX;
  std::string cached_phase_text_;
};

}  // namespace oomlab
