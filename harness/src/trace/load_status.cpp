#include "trace/load_status.hpp"

#include <atomic>

namespace oomlab::trace {

namespace {

// Relaxed: each a figure for a progress line, none guarding anything.
std::atomic<bool> g_loading{false};
std::atomic<std::uint64_t> g_bytes_read{0};
std::atomic<std::uint64_t> g_bytes_total{0};
std::atomic<std::uint64_t> g_events{0};

}  // namespace

LoadStatus load_status() {
  return {.loading = g_loading.load(std::memory_order_relaxed),
          .bytes_read = g_bytes_read.load(std::memory_order_relaxed),
          .bytes_total = g_bytes_total.load(std::memory_order_relaxed),
          .events = g_events.load(std::memory_order_relaxed)};
}

namespace loading {

void begin(std::uint64_t bytes_total) {
  g_bytes_read.store(0, std::memory_order_relaxed);
  g_events.store(0, std::memory_order_relaxed);
  g_bytes_total.store(bytes_total, std::memory_order_relaxed);
  g_loading.store(true, std::memory_order_relaxed);
}

void end() {
  g_loading.store(false, std::memory_order_relaxed);
}

void bytes_read(std::uint64_t bytes) {
  g_bytes_read.store(bytes, std::memory_order_relaxed);
}

void events(std::uint64_t events) {
  g_events.store(events, std::memory_order_relaxed);
}

}  // namespace loading

}  // namespace oomlab::trace
