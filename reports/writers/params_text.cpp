#include "reports/writers/params_text.hpp"

#include <algorithm>

#include "allocators/backends.hpp"
#include "oomlab/registry.hpp"

namespace oomlab {

std::optional<ParamValue> param_value_from_json(const ParamDef& def, const nlohmann::json& value) {
  switch (def.type) {
    case ParamType::bytes:
      if (value.is_number_unsigned()) return Bytes{value.get<std::uint64_t>()};
      break;
    case ParamType::integer:
      if (value.is_number_integer()) return value.get<std::int64_t>();
      break;
    case ParamType::real:
      if (value.is_number()) return value.get<double>();
      break;
    case ParamType::flag:
      if (value.is_boolean()) return value.get<bool>();
      break;
    case ParamType::choice:
    case ParamType::text:
      if (value.is_string()) return value.get<std::string>();
      break;
    case ParamType::choices:
      if (value.is_array() && std::all_of(value.begin(), value.end(),
                                          [](const nlohmann::json& v) { return v.is_string(); }))
        return value.get<ChoiceList>();
      break;
    case ParamType::fraction:
      break;
  }
  return std::nullopt;
}

Params params_from_json(const ParamSpec& spec, const nlohmann::json& object) {
  Params params(spec);
  if (!object.is_object()) return params;
  for (const ParamDef& def : spec) {
    const auto it = object.find(def.name);
    if (it == object.end()) continue;
    if (auto value = param_value_from_json(def, *it)) params.set(def.name, std::move(*value));
  }
  return params;
}

std::string param_json_text(const ParamDef* def, const nlohmann::json& value) {
  if (def != nullptr) {
    if (const auto typed = param_value_from_json(*def, value)) return format_param_value(*typed);
  }
  return value.is_string() ? value.get<std::string>() : value.dump();
}

std::string params_text(const ParamSpec& spec, const nlohmann::json& object) {
  if (!object.is_object() || object.empty()) return "-";
  std::string out;
  for (const auto& item : object.items()) {
    const std::string& name = item.key();
    const auto def =
        std::find_if(spec.begin(), spec.end(), [&](const ParamDef& d) { return d.name == name; });
    out += (out.empty() ? "" : ", ") + name + "=" +
           param_json_text(def == spec.end() ? nullptr : &*def, item.value());
  }
  return out;
}

ParamSpec allocator_option_spec(std::string_view allocator) {
  const BackendInfo* backend = find_backend(allocator);
  return backend == nullptr ? ParamSpec{} : backend->options;
}

ParamSpec scenario_param_spec(std::string_view scenario) {
  const Registry::Entry* entry = Registry::global().find(scenario);
  return entry == nullptr ? ParamSpec{} : entry->params;
}

}  // namespace oomlab
