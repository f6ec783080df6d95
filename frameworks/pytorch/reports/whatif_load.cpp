// whatif.json read back into the result it was written from, so that `oomlab report` of a whatif
// folder lays it out with whatif's own pages; errors name the file and the field.
#include <fmt/format.h>

#include <array>

#include "pytorch/model/torch_options.hpp"
#include "pytorch/reports/whatif_report.hpp"
#include "reports/run/report_input.hpp"
#include "reports/writers/params_text.hpp"

namespace oomlab::torch {

namespace {

// The enum value whose name whatif.json recorded.
template <typename Enum, std::size_t N>
Enum named(const JsonFields& fields, const std::string& key, const std::array<Enum, N>& values) {
  const std::string text = fields.text(key);
  for (const Enum v : values) {
    if (to_string(v) == text) return v;
  }
  std::string names;
  for (const Enum v : values)
    names += (names.empty() ? "" : ", ") + std::string(to_string(v));
  fields.fail(key, "one of " + names);
}

constexpr std::array kOutcomes = {Outcome::oom, Outcome::completed, Outcome::error,
                                  Outcome::interrupted, Outcome::timeout};
constexpr std::array kCauses = {Cause::capacity, Cause::fragmentation, Cause::leak,
                                Cause::external_pressure, Cause::transient};
constexpr std::array kSources = {WhatIfBudgetSource::given, WhatIfBudgetSource::snapshot};

WhatIfAtBudget read_at_budget(const JsonFields& at) {
  WhatIfAtBudget out{.outcome = named(at, "outcome", kOutcomes),
                     .first_failure_index = at.optional_count("first_failure_index"),
                     .request_bytes = at.optional_count("request_bytes").value_or(0)};
  if (at.has("cause")) out.cause = named(at, "cause", kCauses);
  return out;
}

WhatIfRow read_row(const JsonFields& row) {
  WhatIfRow out;
  out.setting = row.text("name");
  out.settings = row.optional_text("alloc_conf");
  out.fraction_cap = row.optional_text("budget_by") == "fraction";
  out.options = params_from_json(torch::torch_option_spec(), row.optional_object("options")
                                                                 ? row.object("options").raw()
                                                                 : nlohmann::json::object());
  out.frontier_bytes = row.optional_count("frontier_bytes");
  out.failing_bytes = row.optional_count("failing_bytes").value_or(0);
  out.trials = row.optional_count("trials").value_or(0);
  if (const auto at = row.optional_object("at_budget")) out.at_budget = read_at_budget(*at);
  // The range as written: a series' (held to lines) with the model's, which whatif_report widens
  // to again; without it a table made from a series would lose its ranges when reported again.
  const std::vector<std::int64_t> range = row.integers("frontier_range_bytes");
  if (!range.empty()) {
    if (range.size() != 2 || range[0] < 0 || range[1] < range[0])
      row.fail("frontier_range_bytes", "[low, high], two byte counts, low first");
    out.made_range = {static_cast<std::uint64_t>(range[0]), static_cast<std::uint64_t>(range[1])};
  }
  return out;
}

}  // namespace

WhatIfResult read_whatif(const std::filesystem::path& path) {
  const nlohmann::json doc = read_json_file(path);
  const JsonFields top(doc, path);
  if (top.optional_text("schema") != kWhatIfSchema)
    top.fail("schema", fmt::format("\"{}\" (whatif.json)", kWhatIfSchema));
  const JsonFields trace = top.object("trace");
  WhatIfResult r{.trace = trace.text("path"),
                 .entries = trace.optional_count("entries").value_or(0),
                 .upper_bytes = top.count("card_bytes"),
                 .budget_bytes = top.optional_count("budget_bytes")};
  if (top.has("budget_source")) r.budget_source = named(top, "budget_source", kSources);
  r.question =
      top.optional_text("question") == "fraction" ? BudgetQuestion::fraction : BudgetQuestion::card;
  const auto lower_bound = doc.find("lower_bound");
  r.lower_bound = lower_bound != doc.end() && lower_bound->is_boolean() && lower_bound->get<bool>();
  r.lower_bound_why = top.optional_text("lower_bound_why");
  if (const auto made = top.optional_object("made_from")) {
    WhatIfMade m{.name = made->text("name"), .at = made->optional_count("at").value_or(0)};
    for (const nlohmann::json& v : made->raw().value("values", nlohmann::json::array())) {
      if (v.is_number_unsigned()) m.values.push_back(v.get<std::uint64_t>());
    }
    for (const std::string& file : made->texts("files"))
      m.files.emplace_back(file);
    r.made = std::move(m);
  }
  r.notes = top.texts("notes");
  for (const JsonFields& row : top.objects("rows"))
    r.rows.push_back(read_row(row));
  const std::string best = top.optional_text("best");
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    if (r.rows[i].setting == "native") r.native = i;
    if (!best.empty() && r.rows[i].setting == best && !r.best) r.best = i;
  }
  r.duration_ms = top.optional_number("duration_ms").value_or(0);
  return r;
}

}  // namespace oomlab::torch
