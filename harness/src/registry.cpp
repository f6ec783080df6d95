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

namespace {

void check_name(std::string_view what, const std::string& name) {
  if (name.empty()) throw Error(ErrorKind::input, fmt::format("a {} has an empty name", what));
}

// Into `list`, kept in order of `number`, after any entry of the same number.
template <typename Entry, typename Number>
void insert_in_order(std::list<Entry>& list, Entry entry, Number number) {
  auto it = list.begin();
  while (it != list.end() && number(*it) <= number(entry))
    ++it;
  list.insert(it, std::move(entry));
}

}  // namespace

BackendKind Registry::add_backend(BackendInfo info) {
  check_name("backend", info.name);
  for (const BackendInfo& b : backends_) {
    if (b.name == info.name) {
      throw Error(ErrorKind::input, fmt::format("backend '{}' is registered twice", info.name));
    }
  }
  if (info.make == nullptr && info.kind != BackendKind::automatic) {
    throw Error(ErrorKind::input, fmt::format("backend '{}' has no factory", info.name));
  }
  if (info.kind == BackendKind::registered) {
    if (next_backend_ == static_cast<std::uint8_t>(BackendKind::registered)) {
      throw Error(ErrorKind::input, fmt::format("backend '{}': too many backends", info.name));
    }
    info.kind = static_cast<BackendKind>(next_backend_++);
  }
  const BackendKind kind = info.kind;
  insert_in_order(backends_, std::move(info),
                  [](const BackendInfo& b) { return static_cast<int>(b.kind); });
  return kind;
}

trace::Format Registry::add_trace_format(trace::FormatInfo info) {
  check_name("trace format", info.name);
  for (const trace::FormatInfo& f : formats_) {
    if (f.name == info.name) {
      throw Error(ErrorKind::input,
                  fmt::format("trace format '{}' is registered twice", info.name));
    }
  }
  if (info.load == nullptr || info.detect == nullptr) {
    throw Error(ErrorKind::input,
                fmt::format("trace format '{}' needs both a detector and an importer", info.name));
  }
  if (info.format == trace::Format::registered) {
    if (next_format_ == static_cast<std::uint8_t>(trace::Format::registered)) {
      throw Error(ErrorKind::input, fmt::format("trace format '{}': too many formats", info.name));
    }
    info.format = static_cast<trace::Format>(next_format_++);
  }
  const trace::Format format = info.format;
  insert_in_order(formats_, std::move(info),
                  [](const trace::FormatInfo& f) { return static_cast<int>(f.format); });
  return format;
}

void Registry::add_oom_dialect(OomDialect dialect) {
  check_name("OOM message dialect", dialect.name);
  if (dialect.recognise == nullptr) {
    throw Error(ErrorKind::input,
                fmt::format("the OOM dialect '{}' has no recogniser", dialect.name));
  }
  // Higher ranks first; among equals, in the order added.
  const auto it = std::find_if(dialects_.begin(), dialects_.end(),
                               [&](const OomDialect& d) { return d.rank < dialect.rank; });
  dialects_.insert(it, std::move(dialect));  // a list: what was added stays where it is
}

void Registry::add_framework(Framework framework) {
  check_name("framework", framework.name);
  for (const Framework& f : frameworks_) {
    if (f.name == framework.name) {
      throw Error(ErrorKind::input,
                  fmt::format("framework '{}' is registered twice", framework.name));
    }
  }
  // In name order, as `oomlab list` shows them (static registration has no order of its own).
  const auto it = std::find_if(frameworks_.begin(), frameworks_.end(),
                               [&](const Framework& f) { return framework.name < f.name; });
  frameworks_.insert(it, std::move(framework));  // a list: what was added stays where it is
}

const CacheWords* Registry::cache_words(std::string_view key) const {
  for (const Framework& f : frameworks_) {
    if (f.cache_words && f.cache_words->key == key) return &*f.cache_words;
  }
  return nullptr;
}

const CacheWords* Registry::snapshot_words() const {
  for (const Framework& f : frameworks_) {
    if (f.models_snapshots && f.cache_words) return &*f.cache_words;
  }
  return nullptr;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_)
    out.push_back(e.name);
  return out;
}

}  // namespace oomlab
