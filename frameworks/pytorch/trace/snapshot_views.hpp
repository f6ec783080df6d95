// The two forms a PyTorch snapshot is read from, behind one interface for SnapshotReader: the
// unpickled Document (a value's byte is found again for a message) and the JSON dump.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "pytorch/trace/pickle.hpp"

namespace oomlab::torch {

using namespace oomlab::trace;  // the engine's trace types, which it works in

// A node of the unpickled snapshot, with where it came from.
struct PickleView {
  const pickle::Document* doc;
  const pickle::Node* node;

  [[nodiscard]] bool is_dict() const { return node->kind == pickle::Kind::dict; }
  [[nodiscard]] bool is_list() const {
    return node->kind == pickle::Kind::list || node->kind == pickle::Kind::tuple;
  }
  [[nodiscard]] std::optional<PickleView> get(std::string_view key) const {
    const pickle::Node* value = doc->get(*node, key);
    return value == nullptr ? std::nullopt : std::optional<PickleView>(PickleView{doc, value});
  }
  [[nodiscard]] std::size_t size() const { return doc->items(*node).size(); }
  [[nodiscard]] PickleView at(std::size_t i) const {
    return {doc, &doc->node(doc->items(*node)[i])};
  }
  [[nodiscard]] std::optional<std::int64_t> integer() const {
    return node->kind == pickle::Kind::integer ? std::optional(node->integer()) : std::nullopt;
  }
  [[nodiscard]] std::optional<std::string_view> text() const {
    return node->kind == pickle::Kind::text ? std::optional(doc->text(*node)) : std::nullopt;
  }
  [[nodiscard]] std::optional<bool> boolean() const {
    return node->kind == pickle::Kind::boolean ? std::optional(node->integer() != 0) : std::nullopt;
  }
  [[nodiscard]] std::optional<double> number() const {
    if (node->kind == pickle::Kind::real) return node->real();
    if (node->kind == pickle::Kind::integer) return static_cast<double>(node->integer());
    return std::nullopt;
  }
  // A dict's entries with text keys, in order.
  template <typename F>
  void for_each_entry(F&& f) const {
    const auto items = doc->items(*node);
    for (std::size_t i = 0; i + 1 < items.size(); i += 2) {
      const pickle::Node& key = doc->node(items[i]);
      if (key.kind == pickle::Kind::text)
        f(doc->text(key), PickleView{doc, &doc->node(items[i + 1])});
    }
  }
  [[nodiscard]] std::string where() const { return fmt::format(" (byte {})", doc->offset(*node)); }
};

struct JsonView {
  const nlohmann::json* value;

  [[nodiscard]] bool is_dict() const { return value->is_object(); }
  [[nodiscard]] bool is_list() const { return value->is_array(); }
  [[nodiscard]] std::optional<JsonView> get(std::string_view key) const {
    const auto it = value->find(key);
    return it == value->end() ? std::nullopt : std::optional<JsonView>(JsonView{&*it});
  }
  [[nodiscard]] std::size_t size() const { return value->size(); }
  [[nodiscard]] JsonView at(std::size_t i) const { return {&(*value)[i]}; }
  [[nodiscard]] std::optional<std::int64_t> integer() const {
    if (value->is_number_unsigned()) {
      const auto u = value->get<std::uint64_t>();
      return u <= static_cast<std::uint64_t>(INT64_MAX)
                 ? std::optional(static_cast<std::int64_t>(u))
                 : std::nullopt;
    }
    return value->is_number_integer() ? std::optional(value->get<std::int64_t>()) : std::nullopt;
  }
  [[nodiscard]] std::optional<std::string_view> text() const {
    return value->is_string()
               ? std::optional<std::string_view>(value->get_ref<const std::string&>())
               : std::nullopt;
  }
  [[nodiscard]] std::optional<bool> boolean() const {
    return value->is_boolean() ? std::optional(value->get<bool>()) : std::nullopt;
  }
  [[nodiscard]] std::optional<double> number() const {
    return value->is_number() ? std::optional(value->get<double>()) : std::nullopt;
  }
  template <typename F>
  void for_each_entry(F&& f) const {
    for (const auto& [key, item] : value->items())
      f(std::string_view(key), JsonView{&item});
  }
  [[nodiscard]] static std::string where() { return {}; }
};

}  // namespace oomlab::torch
