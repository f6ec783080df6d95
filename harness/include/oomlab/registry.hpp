// What oomlab knows: scenarios, allocator backends, trace formats, OOM message dialects and the
// frameworks that bring some of them. Built-in scenarios register themselves with one line at the
// bottom of their file (OOMLAB_REGISTER_SCENARIO), frameworks likewise from their folder
// (OOMLAB_REGISTER_FRAMEWORK). External plugins (--plugin PATH.so, docs/commands.md) export
//   extern "C" void oomlab_register(oomlab::Registry&);
// and call add(), add_backend(), add_trace_format() or add_oom_dialect() there.
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oomlab/backend.hpp"
#include "oomlab/framework.hpp"
#include "oomlab/params.hpp"
#include "oomlab/scenario.hpp"
#include "oomlab/trace_format.hpp"

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

  // Backends, trace formats and dialects: each throws Error(input) when the name is empty or
  // taken, or the entry lacks what it must have (a factory, an importer, a recogniser). A
  // registered backend or format gets its number here; the lists stay in number order, and an
  // entry, once added, stays where it is (references to it stay valid).
  BackendKind add_backend(BackendInfo info);
  [[nodiscard]] const std::list<BackendInfo>& backends() const { return backends_; }
  trace::Format add_trace_format(trace::FormatInfo info);
  [[nodiscard]] const std::list<trace::FormatInfo>& trace_formats() const { return formats_; }
  void add_oom_dialect(OomDialect dialect);
  [[nodiscard]] const std::list<OomDialect>& oom_dialects() const { return dialects_; }
  // Frameworks: what each adds goes into the lists above when they are first read (the engine's
  // backend_catalog(), trace::formats(), oom_dialects()).
  void add_framework(Framework framework);
  [[nodiscard]] const std::list<Framework>& frameworks() const { return frameworks_; }
  // The words of the framework whose CacheWords::key is `key`; null when none has it.
  [[nodiscard]] const CacheWords* cache_words(std::string_view key) const;
  // The words of the framework whose model reads exec's program snapshots
  // (Framework::models_snapshots); null when none does.
  [[nodiscard]] const CacheWords* snapshot_words() const;

 private:
  std::vector<Entry> entries_;
  std::list<BackendInfo> backends_;
  std::list<trace::FormatInfo> formats_;
  std::list<OomDialect> dialects_;
  std::list<Framework> frameworks_;
  std::uint8_t next_backend_ = kFirstRegisteredBackend;
  std::uint8_t next_format_ = trace::kFirstRegisteredFormat;
};

namespace detail {
struct Registrar {
  explicit Registrar(const Registry::Factory& factory) { Registry::global().add(factory); }
};
struct FrameworkRegistrar {
  explicit FrameworkRegistrar(Framework (*describe)()) {
    Registry::global().add_framework(describe());
  }
};
}  // namespace detail

}  // namespace oomlab

#define OOMLAB_REGISTER_SCENARIO(Type)                                               \
  namespace {                                                                        \
  const ::oomlab::detail::Registrar oomlab_registrar_##Type{                         \
      [] { return std::unique_ptr<::oomlab::Scenario>(std::make_unique<Type>()); }}; \
  }

// In a framework's folder: `Framework describe_pytorch();` then OOMLAB_REGISTER_FRAMEWORK(pytorch).
#define OOMLAB_REGISTER_FRAMEWORK(id)                                               \
  namespace {                                                                       \
  const ::oomlab::detail::FrameworkRegistrar oomlab_framework_##id{&describe_##id}; \
  }
