#include "reports/run/cache_words.hpp"

#include "oomlab/registry.hpp"
#include "oomlab/units.hpp"

namespace oomlab {

namespace {

const CacheWords& engine_words() {
  static const CacheWords kWords{
      .key = "cache", .owner = "the allocator", .settings_variable = "settings"};
  return kWords;
}

}  // namespace

const CacheWords& words_of(const CacheState& cache) {
  const CacheWords* words = Registry::global().cache_words(cache.framework);
  return words != nullptr ? *words : engine_words();
}

const CacheWords& snapshot_words() {
  const CacheWords* words = Registry::global().snapshot_words();
  return words != nullptr ? *words : engine_words();
}

std::string model_owner(const ProgramModel& model) {
  return model.owner.empty() ? snapshot_words().owner : model.owner;
}

std::string model_settings_heading(const ProgramModel& model) {
  return model.owner.empty() ? snapshot_words().settings_variable : "What to set";
}

std::string size_in(const CacheWords& words, std::uint64_t bytes) {
  return words.size != nullptr ? words.size(bytes) : format_bytes(bytes);
}

}  // namespace oomlab
