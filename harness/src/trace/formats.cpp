// The trace formats: the engine's own two, then what frameworks and plugins register.
#include <fmt/format.h>

#include <mutex>

#include "oomlab/registry.hpp"
#include "oomlab/trace_format.hpp"
#include "trace/importers.hpp"

namespace oomlab::trace {

namespace {

bool is_oomlab_csv(std::string_view head) {
  return first_content(head).starts_with("seq,t_ns,step,phase,op,bytes,ptr");
}

bool is_rmm_csv(std::string_view head) {
  return first_content(head).starts_with("Thread,Time,Action,Pointer,Size,Stream");
}

void add_engine_formats(Registry& registry) {
  registry.add_trace_format(
      {.format = Format::oomlab,
       .name = "oomlab",
       .described_as = "an events.csv",
       .detect = &is_oomlab_csv,
       .load = [](const std::filesystem::path& path, const LoadOptions& options) {
         return load_oomlab_csv(path, StopPoll(options.check_stop));
       }});
  registry.add_trace_format(
      {.format = Format::rmm,
       .name = "rmm",
       .described_as = "an RMM log",
       .detect = &is_rmm_csv,
       .load = [](const std::filesystem::path& path, const LoadOptions& options) {
         return load_rmm_csv(path, StopPoll(options.check_stop));
       }});
}

}  // namespace

const std::list<FormatInfo>& formats() {
  static std::once_flag once;
  std::call_once(once, [] {
    Registry& registry = Registry::global();
    add_engine_formats(registry);
    for (const Framework& framework : registry.frameworks()) {
      if (framework.add_trace_formats != nullptr) framework.add_trace_formats(registry);
    }
  });
  return Registry::global().trace_formats();
}

const FormatInfo* format_info(Format format) {
  for (const FormatInfo& f : formats()) {
    if (f.format == format) return &f;
  }
  return nullptr;
}

const FormatInfo* find_format(std::string_view name) {
  for (const FormatInfo& f : formats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string known_formats() {
  std::string out;
  const auto& all = formats();
  std::size_t i = 0;
  for (const FormatInfo& f : all) {
    if (i > 0) out += i + 1 == all.size() ? (all.size() > 2 ? ", or " : " or ") : ", ";
    out += f.described_as;
    ++i;
  }
  return out;
}

}  // namespace oomlab::trace
