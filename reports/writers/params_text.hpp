// Parameters and options read back from the JSON oomlab wrote (summary.json, whatif.json,
// frontier.json), typed again by their declarations so that every report writes a value as the
// rest of oomlab does (format_param_value: "max", "20MiB", "on"), never as its raw JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "oomlab/params.hpp"

namespace oomlab {

// `value` as the type `def` declares; nullopt where the JSON does not hold that type (and for a
// fraction, recorded as its text: only the CLI parses text).
[[nodiscard]] std::optional<ParamValue> param_value_from_json(const ParamDef& def,
                                                              const nlohmann::json& value);
// `spec`'s defaults with the values of `object` it declares and can read over them.
[[nodiscard]] Params params_from_json(const ParamSpec& spec, const nlohmann::json& object);
// One value as oomlab writes it: typed by `def` where it declares the value, else a string bare
// and anything else as JSON.
[[nodiscard]] std::string param_json_text(const ParamDef* def, const nlohmann::json& value);
// "name=value, ..." in the object's order, each value by param_json_text; "-" when empty.
[[nodiscard]] std::string params_text(const ParamSpec& spec, const nlohmann::json& object);

// The declarations behind a recorded name: an allocator's options, a scenario's parameters (a
// plugin's scenario or a program run has none here: their values are shown as recorded).
[[nodiscard]] ParamSpec allocator_option_spec(std::string_view allocator);
[[nodiscard]] ParamSpec scenario_param_spec(std::string_view scenario);

}  // namespace oomlab
