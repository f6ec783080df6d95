// Toy, a framework added by following ARCHITECTURE.md's "A framework" in a folder of its own,
// through the public headers only, and loaded as a plugin (--plugin
// oomlab_toy_framework_plugin.so): what it brings is a model of its allocator (the backend `slab`:
// whole slabs, so a request costs its size rounded up to one; no GPU needed) and its traces (the
// format `toy`: "alloc BYTES ADDRESS" and "free ADDRESS" lines under the header "# oomlab toy
// trace"), which `auto` replays through that model; the backend takes memory in whole slabs (its
// granularity) and refuses at its own limit (its OOM is its own, never the driver's); and a
// command of its own, `oomlab slabs --trace FILE`: the most slabs a toy trace holds at once.
// tests/architecture_guide_test.cpp drives the real binary with it.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "oomlab/command_table.hpp"
#include "oomlab/error.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace_builder.hpp"

namespace {

using oomlab::AllocResult;
using oomlab::AllocStatus;

class SlabAllocator final : public oomlab::Allocator {
 public:
  SlabAllocator(std::uint64_t capacity, std::uint64_t slab) : capacity_(capacity), slab_(slab) {}

 private:
  [[nodiscard]] std::string_view do_name() const override { return "slab"; }
  AllocResult do_allocate(std::size_t bytes, oomlab::Stream /*stream*/) override {
    if (bytes == 0) return {};  // nothing to hold: success with no pointer, as cudaMalloc's
    // Checked before rounding: a request near the largest size would wrap around to a few slabs.
    if (bytes > capacity_ - used_) return {.status = AllocStatus::out_of_memory};
    const std::uint64_t cost = footprint(bytes);
    if (cost > capacity_ - used_) return {.status = AllocStatus::out_of_memory};
    used_ += cost;
    const std::uint64_t address = next_;
    next_ += cost + slab_;                             // never handed out twice, never 0
    return {.ptr = reinterpret_cast<void*>(address)};  // NOLINT: an address, never dereferenced
  }
  void do_deallocate(void* ptr, std::size_t bytes, oomlab::Stream /*stream*/) override {
    if (ptr != nullptr) used_ -= footprint(bytes);
  }
  [[nodiscard]] oomlab::MemoryState do_state() const override {
    return {.reserved_bytes = used_,
            .own_bytes_bound = capacity_,
            .device_free_bytes = capacity_ - used_,
            .device_total_bytes = capacity_,
            .used_bytes = used_};
  }
  [[nodiscard]] std::uint64_t do_reserved_bytes() const override { return used_; }
  [[nodiscard]] std::uint64_t do_footprint(std::size_t bytes) const override {
    return (bytes + slab_ - 1) / slab_ * slab_;
  }
  [[nodiscard]] bool do_simulated() const override { return true; }

  std::uint64_t capacity_;
  std::uint64_t slab_;
  std::uint64_t used_ = 0;
  std::uint64_t next_ = std::uint64_t{1} << 40U;
};

oomlab::BackendInfo slab_backend() {
  return {.name = "slab",
          .summary = "Toy's allocator: whole slabs, a request rounded up to one (no GPU needed)",
          .options = {{.name = "slab",
                       .type = oomlab::ParamType::bytes,
                       .default_value = oomlab::Bytes{std::uint64_t{1} << 20U},
                       .help = "the slab every request is rounded up to"}},
          .needs_device = false,
          .granularity_bytes = std::uint64_t{1} << 20U,
          .oom_source = "slab",
          .make =
              [](const oomlab::Params& options, const oomlab::BackendSite& site) {
                return std::unique_ptr<oomlab::Allocator>(
                    std::make_unique<SlabAllocator>(site.budget_bytes, options.bytes("slab")));
              },
          .replays = "a toy trace",
          .auto_notice = "a toy trace: replayed through 'slab', the model of Toy's allocator"};
}

constexpr std::string_view kToyHeader = "# oomlab toy trace";

[[noreturn]] void bad_line(const std::filesystem::path& path, std::uint64_t line,
                           std::string_view what) {
  throw oomlab::Error(oomlab::ErrorKind::input,
                      path.string() + ":" + std::to_string(line) + ": " + std::string(what));
}

std::uint64_t number(std::string_view text, int base, const std::filesystem::path& path,
                     std::uint64_t line) {
  if (base == 16 && text.starts_with("0x")) text.remove_prefix(2);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    bad_line(path, line, "'" + std::string(text) + "' is not a number");
  return value;
}

oomlab::trace::Trace load_toy(const std::filesystem::path& path,
                              const oomlab::trace::LoadOptions& options) {
  std::ifstream file(path);
  if (!file) throw oomlab::Error(oomlab::ErrorKind::input, path.string() + ": cannot open");
  oomlab::trace::TraceBuilder builder(oomlab::trace::find_format("toy")->format, path);
  std::unordered_map<std::uint64_t, std::uint64_t> live;  // address -> bytes, for the frees
  std::string text;
  std::uint64_t line = 0;
  while (std::getline(file, text)) {
    ++line;
    if (options.check_stop && line % 4096 == 0) options.check_stop();
    if (text.empty() || text.starts_with('#')) continue;
    std::vector<std::string_view> words;
    for (std::string_view rest = text; !rest.empty();) {
      const auto space = rest.find(' ');
      if (space != 0) words.push_back(rest.substr(0, space));
      rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    }
    const auto t_ns = line * 1000;
    if (words.size() == 3 && words[0] == "alloc") {
      const std::uint64_t bytes = number(words[1], 10, path, line);
      const std::uint64_t address = number(words[2], 16, path, line);
      live[address] = bytes;
      builder.add(oomlab::trace::Op::alloc, bytes, address, 0, 0, t_ns, line, line);
    } else if (words.size() == 2 && words[0] == "free") {
      const std::uint64_t address = number(words[1], 16, path, line);
      const auto it = live.find(address);
      const std::uint64_t bytes = it == live.end() ? 0 : it->second;
      if (it != live.end()) live.erase(it);
      builder.add(oomlab::trace::Op::free, bytes, address, 0, 0, t_ns, line, line);
    } else {
      bad_line(path, line, "expected 'alloc BYTES ADDRESS' or 'free ADDRESS'");
    }
  }
  return builder.finish();
}

// `oomlab slabs --trace FILE [--slab-mib N]`: the most slabs of N MiB the trace holds at once,
// and the first line where it holds them.
int slabs(const std::string& path, std::uint64_t slab_mib, std::ostream& out) {
  const std::uint64_t slab = slab_mib << 20U;
  const oomlab::trace::Trace trace = load_toy(path, {});
  std::uint64_t live = 0;
  std::uint64_t most = 0;
  std::uint64_t at_line = 0;
  for (const oomlab::trace::Event e : trace.events) {
    const std::uint64_t cost = (e.bytes + slab - 1) / slab;
    if (e.op == oomlab::trace::Op::alloc) {
      live += cost;
      if (live > most) {
        most = live;
        at_line = e.line;
      }
    } else if (e.op == oomlab::trace::Op::free) {
      live -= std::min(live, cost);
    }
  }
  out << path << ": at most " << most << " slabs of " << slab_mib << " MiB live at once (line "
      << at_line << "): " << most * slab_mib << " MiB\n";
  return 0;
}

void add_commands(oomlab::cli::CommandTable& table) {
  table.add({.name = "slabs",
             .summary = "Toy: the most slabs a toy trace holds at once",
             .place = 95,
             .define = [](CLI::App& app) {
               auto trace = std::make_shared<std::string>();
               auto slab_mib = std::make_shared<std::uint64_t>(1);
               app.add_option("--trace", *trace, "FILE: a toy trace")->required();
               app.add_option("--slab-mib", *slab_mib, "N: the slab, in MiB (default 1)")
                   ->check(CLI::PositiveNumber);
               return [trace, slab_mib](const oomlab::cli::CommandCall& call) {
                 return slabs(*trace, *slab_mib, call.out);
               };
             }});
}

void add_backends(oomlab::Registry& registry) {
  registry.add_backend(slab_backend());
}

void add_trace_formats(oomlab::Registry& registry) {
  registry.add_trace_format(
      {.name = "toy",
       .described_as = "a toy trace",
       .detect = [](std::string_view head) { return head.starts_with(kToyHeader); },
       .load = &load_toy,
       .replayed_by = "slab"});
}

}  // namespace

extern "C" void oomlab_register(oomlab::Registry& registry) {
  registry.add_framework({.name = "Toy",
                          .summary = "its allocator modelled (slab), its traces read (toy)",
                          .add_backends = &add_backends,
                          .add_trace_formats = &add_trace_formats,
                          .add_commands = &add_commands});
}
