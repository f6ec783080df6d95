// The scenarios oomlab knows. Built-ins register themselves with one line at the bottom of their
// file (OOMLAB_REGISTER_SCENARIO). External plugins (--plugin PATH.so, docs/commands.md) export
//   extern "C" void oomlab_register(oomlab::Registry&);   and call add() there.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/params.hpp"
#include "oomlab/scenario.hpp"

namespace oomlab {

class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Scenario>()>;

  struct Entry {
    std::string name;
    std::string summary;
    std::string details;
    ParamSpec params;
    Factory factory;
    bool replays_traces = false;  // Scenario::replays_traces()
  };

  // The registry built-in scenarios register into at static initialisation.
  static Registry& global();

  // Throws Error(input) when the name is already taken or the factory yields nothing.
  void add(const Factory& factory);

  [[nodiscard]] std::unique_ptr<Scenario> create(std::string_view name) const;
  [[nodiscard]] const Entry* find(std::string_view name) const;
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
  [[nodiscard]] std::vector<std::string> names() const;
  // The scenario that replays a trace already read (Scenario::replays_traces()), the first by
  // name when several do; null when none is registered.
  [[nodiscard]] const Entry* trace_player() const;

 private:
  std::vector<Entry> entries_;
};

namespace detail {
struct Registrar {
  explicit Registrar(const Registry::Factory& factory) { Registry::global().add(factory); }
};
}  // namespace detail

}  // namespace oomlab

#define OOMLAB_REGISTER_SCENARIO(Type)                                               \
  namespace {                                                                        \
  const ::oomlab::detail::Registrar oomlab_registrar_##Type{                         \
      [] { return std::unique_ptr<::oomlab::Scenario>(std::make_unique<Type>()); }}; \
  }
