// `oomlab whatif`: one PyTorch snapshot under the allocator settings people reach for after an
// OOM, on the model of PyTorch's caching allocator; one table, the answer first.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>

#include "cli/commands.hpp"
#include "cli/out_folder.hpp"
#include "cli/output_flag.hpp"
#include "cli/parse.hpp"
#include "cli/series_cli.hpp"
#include "cli/signals.hpp"
#include "io/output_file.hpp"
#include "oomlab/error.hpp"
#include "oomlab/units.hpp"
#include "pytorch/face/alloc_conf.hpp"
#include "pytorch/face/face.hpp"
#include "pytorch/reports/whatif_report.hpp"
#include "pytorch/settings/whatif.hpp"
#include "pytorch/trace/pytorch_import.hpp"
#include "trace/importers.hpp"
#include "trace/trace.hpp"

namespace oomlab::torch {

using namespace oomlab::cli;  // the engine's cli types, which it works in

namespace fs = std::filesystem;

namespace {

// Refused before any replay, naming the file: one that cannot be read (the trace loader's
// words), or content that is not a PyTorch snapshot (whatif's).
void check_pytorch_snapshot(const fs::path& path) {
  std::ifstream file = trace::open_trace(path);
  std::string head(64, '\0');
  file.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(file.gcount()));
  trace::refuse_compressed(path, head);
  const trace::Format format = trace::detect_format(head);
  if (format == torch::pytorch_format()) return;
  throw Error(ErrorKind::input,
              fmt::format("{}: not a PyTorch memory snapshot{}: whatif replays what "
                          "torch.cuda.memory._dump_snapshot() writes",
                          path.string(),
                          format == trace::Format::automatic
                              ? std::string()
                              : fmt::format(" (it reads as {})", trace::to_string(format))));
}

// whatif replays the program's requests: the replay's other level, its allocator's segments, is
// what each setting decides anew.
void check_level(const std::string& level) {
  if (level == "tensor") return;
  if (level == "segment") {
    throw_usage(
        "--level: 'segment': whatif replays what the program asked for (tensor); the segments its "
        "allocator got are what each setting decides anew");
  }
  throw_usage(
      fmt::format("--level: '{}' is not a level{}: whatif takes tensor (what the program "
                  "asked for)",
                  level, did_you_mean(level, {"tensor", "segment"})));
}

// --from and --at: both or neither, one name.
std::optional<std::pair<SeriesAsked, std::uint64_t>> series_asked(const WhatIfOptions& o) {
  if (o.from.empty() && o.at.empty()) return std::nullopt;
  if (o.from.empty()) throw_usage("--at needs --from: the values of the snapshots it is made from");
  if (o.at.empty()) throw_usage("--from needs --at: the value the table is made for (batch=64)");
  SeriesAsked asked = parse_series_values(o.from, "--from");
  const auto [name, value] = parse_series_value(o.at, "--at");
  if (name != asked.name) {
    throw_usage(
        fmt::format("--at names '{}', --from names '{}': give the same name", name, asked.name));
  }
  return std::make_pair(std::move(asked), value);
}

WhatIfRequest request_from(const WhatIfOptions& o) {
  if (o.trace.empty()) throw_usage("whatif needs a snapshot: --trace FILE");
  check_destination("--json", o.json);  // before the replays: their result is not to be lost
  check_level(o.level);
  WhatIfRequest request{.trace = o.trace};
  if (!o.device.empty()) {
    try {
      request.device = static_cast<std::uint32_t>(parse_device_index(o.device));
    } catch (const Error& e) {
      throw_usage(fmt::format("--device: {}", e.what()));
    }
  }
  if (!o.budget.empty()) {
    try {
      request.budget = parse_budget(o.budget);
    } catch (const Error& e) {
      throw_usage(fmt::format("--budget: {}", e.what()));
    }
  }
  if (o.fraction) request.question = BudgetQuestion::fraction;
  if (!o.alloc_conf.empty()) {
    static_cast<void>(torch_assignments(o.alloc_conf, "--alloc-conf"));
    request.own_options = parse_allocator("torch:" + o.alloc_conf).options;
    request.own_name = o.alloc_conf;
  }
  return request;
}

// The trace at --at made from the snapshots --from names, for the request to replay (no file):
// each snapshot checked to be PyTorch's first. The series' notes, and what it was made from.
std::vector<std::string> made_at(const std::string& pattern,
                                 const std::pair<SeriesAsked, std::uint64_t>& series,
                                 WhatIfRequest& request, std::shared_ptr<const trace::Trace>& held,
                                 WhatIfMade& made) {
  const auto& [asked, value] = series;
  for (const std::uint64_t v : asked.values) {
    const fs::path path = series_path(pattern, asked.name, v);
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) check_pytorch_snapshot(path);
  }
  const std::atomic<bool>* stop = request.stop;
  const trace::TraceSeries series_made =
      load_series(pattern, asked, {.device = request.device}, [stop] {
        if (stop != nullptr && stop->load()) throw Interrupted();
      });
  if (const auto why = series_made.misaligned())
    throw Error(ErrorKind::input, fmt::format("--from {}: {}", pattern, *why));
  request.loaded = std::make_shared<const trace::Trace>(series_made.at(value));
  request.trace = pattern;  // no file at --at was read: the table is of the pattern's series
  made = {.name = asked.name,
          .at = value,
          .values = asked.values,
          .files = trace::source_files(series_made),
          .fit = series_made.fit()};
  std::vector<std::string> notes = series_notes(series_made);
  const std::uint64_t anchor = asked.values.back();
  if (series_made.fit().transient > 0 && value != anchor) {
    held =
        std::make_shared<const trace::Trace>(series_made.at(value, trace::TraceSeries::Rule::held));
    made.held = trace::TraceSeries::Rule::held;
    notes.push_back(fmt::format(
        "{} requests that change with {} live inside one call (a library's workspace, such as "
        "cuDNN's for a convolution, sized by the algorithm it picks for the shape): each row's "
        "range runs from its frontier with them held at their size at {}={} to its frontier "
        "with them on their lines",
        format_count(series_made.fit().transient), asked.name, asked.name, anchor));
  }
  notes.insert(notes.begin(),
               fmt::format("{}={} was not run: its trace is made from the snapshots at {}={} "
                           "({} is their pattern), each request's size a line in {}",
                           asked.name, value, asked.name, fmt::join(asked.values, ","), pattern,
                           asked.name));
  return notes;
}

// The same table with the transient requests held: each row's range between the two frontiers.
void add_held_ranges(WhatIfRequest request, std::shared_ptr<const trace::Trace> held,
                     WhatIfResult& result) {
  request.loaded = std::move(held);
  const WhatIfResult other = what_if(request);
  for (WhatIfRow& row : result.rows) {
    const auto same = std::find_if(other.rows.begin(), other.rows.end(),
                                   [&](const WhatIfRow& r) { return r.setting == row.setting; });
    if (same == other.rows.end() || !same->frontier_bytes || !row.frontier_bytes) continue;
    row.made_range = {std::min(*same->frontier_bytes, *row.frontier_bytes),
                      std::max(*same->frontier_bytes, *row.frontier_bytes)};
  }
}

// A what-if's record and its reports.
constexpr std::array<std::string_view, 3> kWhatIfFiles = {"whatif.json", "report.html",
                                                          "report.md"};

void write_out_folder(const fs::path& folder, const WhatIfResult& result, const std::string& json) {
  write_output_file(folder / "whatif.json", json);
  write_output_file(folder / "report.html", whatif_html(result));
  write_output_file(folder / "report.md", whatif_markdown(result));
}

}  // namespace

int whatif_command(const WhatIfOptions& o, std::ostream& out, std::ostream& err) {
  WhatIfRequest request = request_from(o);
  if (!o.out.empty()) {  // before the replays: their result is not to be lost
    claim_out_folder(
        o.out, o.force,
        {.what = "a what-if", .marks = std::span(kWhatIfFiles).first(1), .replaced = kWhatIfFiles});
  }
  if (!o.budget.empty()) {
    for (const std::string& note : read_budget(o.budget).notes)
      err << "oomlab: note: " << note << '\n';
  }
  const auto series = series_asked(o);
  std::vector<std::string> made_notes;
  if (!series) check_pytorch_snapshot(request.trace);
  const StopOnSignal signals;
  request.stop = StopOnSignal::flag();
  WhatIfResult result;
  try {
    std::shared_ptr<const trace::Trace> held;
    WhatIfMade made;
    if (series) made_notes = made_at(o.trace, *series, request, held, made);
    result = what_if(request);
    if (series) result.made = std::move(made);
    if (held) add_held_ranges(request, held, result);
    result.notes.insert(result.notes.begin(), made_notes.begin(), made_notes.end());
  } catch (const Interrupted&) {
    err << "oomlab: interrupted: the what-if stopped; every replay freed what it took\n";
    return kExitInterrupted;
  }
  std::ostream& text = words_stream(o.json, out, err);
  text << (o.quiet ? whatif_answer(result) + "\n" : whatif_text(result));
  const std::string json = whatif_json(result).dump(2) + "\n";
  emit_output(o.json, json, out);
  if (!o.out.empty()) {
    write_out_folder(o.out, result, json);
    if (!o.quiet) text << fmt::format("wrote {}/ (whatif.json, report.html, report.md)\n", o.out);
  }
  return kExitOk;
}

}  // namespace oomlab::torch
