#include "oomlab/registry.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "oomlab/error.hpp"

namespace oomlab {

Registry& Registry::global() {
  static Registry registry;
  return registry;
}

void Registry::add(const Factory& factory) {
  std::unique_ptr<Scenario> sample = factory ? factory() : nullptr;
  if (!sample) throw Error(ErrorKind::input, "a scenario factory returned no scenario");
  std::string name(sample->name());
  if (name.empty()) throw Error(ErrorKind::input, "a scenario has an empty name");
  if (find(name) != nullptr) {
    throw Error(ErrorKind::input, fmt::format("scenario '{}' is registered twice", name));
  }
  entries_.push_back(Entry{std::move(name), std::string(sample->summary()),
                           std::string(sample->details()), sample->params(), factory,
                           sample->replays_traces()});
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
}

const Registry::Entry* Registry::find(std::string_view name) const {
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const Entry& e) { return e.name == name; });
  return it == entries_.end() ? nullptr : &*it;
}

std::unique_ptr<Scenario> Registry::create(std::string_view name) const {
  const Entry* entry = find(name);
  return entry == nullptr ? nullptr : entry->factory();
}

const Registry::Entry* Registry::trace_player() const {
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [](const Entry& e) { return e.replays_traces; });
  return it == entries_.end() ? nullptr : &*it;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_)
    out.push_back(e.name);
  return out;
}

}  // namespace oomlab
