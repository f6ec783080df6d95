// What a replay concludes about failures and demand. Which request ended the replay (one the
// program got), which of the program's own failed requests failed again when made where they
// failed, where the program itself failed over the whole trace (replayed or not), and its peak
// demand, with and without its failed requests. Every place is a trace entry: 0-based, as the
// trace file counts them, with the line for text formats.
#pragma once

#include <cstdint>
#include <string>

#include "oomlab/scenario.hpp"
#include "oomlab/trace.hpp"

namespace oomlab {

class ReplayVerdict {
 public:
  // Reads the whole trace: the program's failures and its peaks, whatever the replay reaches.
  explicit ReplayVerdict(const trace::Trace& trace);

  // A request the program got failed here (a position in Trace::events): the replay ends.
  void broke(std::uint32_t position);
  // One of the program's own failed requests, made again, failed again.
  void reproduced(std::uint32_t position);
  // A failed request the program survived, made again, refused again: it goes on.
  void refused_again(std::uint32_t position);

  // The metrics (first_failure_*, reproduced_failures, trace_failures, trace_first_failure_*,
  // failed_at_same_place, peak_live_bytes, peak_with_failed_bytes) and the notes that say them.
  void report(RunContext& ctx) const;

 private:
  static constexpr std::uint32_t kNowhere = trace::Event::kNone;
  struct Peak {
    std::uint64_t bytes = 0;
    std::uint32_t at = kNowhere;
  };
  void seen(std::uint32_t position);
  [[nodiscard]] trace::Event at(std::uint32_t position) const { return trace_.events[position]; }
  [[nodiscard]] std::string broke_note() const;
  [[nodiscard]] std::string reproduced_note() const;
  [[nodiscard]] std::string peaks_note() const;

  const trace::Trace& trace_;
  // The replay: positions in Trace::events.
  std::uint32_t first_failure_ = kNowhere;  // its first failed request, of any kind
  std::uint32_t broke_at_ = kNowhere;
  std::uint32_t first_reproduced_ = kNowhere;
  std::uint64_t reproduced_ = 0;
  std::uint32_t first_refused_again_ = kNowhere;
  std::uint64_t refused_again_ = 0;
  // The whole trace: its failed requests, and the first it did not survive (its OOM).
  std::uint32_t program_first_failure_ = kNowhere;
  std::uint64_t program_failures_ = 0;
  std::uint32_t program_fatal_ = kNowhere;
  std::uint64_t fatal_failures_ = 0;
  Peak peak_live_;
  Peak peak_with_failed_;
};

// "entry N (line L), T s into the trace", or what a block from before the trace was.
[[nodiscard]] std::string describe_place(const trace::Event& e);

}  // namespace oomlab
