// libFuzzer target for every parser of user text (harness/cli/parse.hpp). Any input may be
// refused with oomlab::Error; a crash, a sanitizer report, any other exception or a broken
// round trip is a bug.
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/parse.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"

namespace {

template <typename F>
void refused_or_ok(F&& parse) {
  try {
    parse();
  } catch (const oomlab::Error&) {  // a clean refusal is the expected answer to bad text
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace oomlab::cli;
  const std::string text(reinterpret_cast<const char*>(data), size);

  refused_or_ok([&] {
    const oomlab::Bytes b = parse_size(text);
    if (parse_size(std::to_string(b.value)).value != b.value) __builtin_trap();  // round trip
  });
  refused_or_ok([&] { (void)parse_budget(text); });
  refused_or_ok([&] {
    const oomlab::Fraction f = parse_fraction(text);
    if (f.denominator == 0 || f.numerator > f.denominator) __builtin_trap();
  });
  refused_or_ok([&] { (void)parse_percent(text); });
  refused_or_ok([&] { (void)parse_flag(text); });
  refused_or_ok([&] { (void)parse_integer(text); });
  refused_or_ok([&] { (void)parse_real(text); });
  refused_or_ok([&] { (void)parse_allocator(text); });
  refused_or_ok([&] { (void)parse_verify_mode(text); });
  refused_or_ok([&] {
    static const oomlab::ParamSpec spec = {
        {.name = "block", .type = oomlab::ParamType::bytes, .default_value = oomlab::Bytes{1}},
        {.name = "keep",
         .type = oomlab::ParamType::fraction,
         .default_value = oomlab::Fraction{1, 2}},
        {.name = "n",
         .type = oomlab::ParamType::integer,
         .default_value = std::int64_t{1},
         .min_integer = 0},
        {.name = "x", .type = oomlab::ParamType::real, .default_value = 0.5},
        {.name = "on", .type = oomlab::ParamType::flag, .default_value = true},
        {.name = "mode",
         .type = oomlab::ParamType::choice,
         .default_value = std::string("a"),
         .choices = {"a", "b"}},
        {.name = "modes",
         .type = oomlab::ParamType::choices,
         .default_value = oomlab::ChoiceList{"a"},
         .choices = {"a", "b", "c"}},
    };
    // The input as a list of assignments, split at newlines.
    std::vector<std::string> assignments;
    std::string_view rest = text;
    while (!rest.empty()) {
      const auto nl = rest.find('\n');
      assignments.emplace_back(rest.substr(0, nl));
      rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
    }
    (void)parse_params(spec, assignments, "fuzz", "--param");
  });
  (void)closest_name(text, {"fragmentation", "async", "release_threshold"});
  return 0;
}
