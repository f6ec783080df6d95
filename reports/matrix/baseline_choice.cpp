#include "reports/matrix/baseline_choice.hpp"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <system_error>
#include <vector>

#include "oomlab/error.hpp"
#include "reports/matrix/compare.hpp"
#include "reports/matrix/versions.hpp"

namespace oomlab {

namespace fs = std::filesystem;

namespace {

// "580.159.04" -> "580"; "" -> "none" (the nightly's name for a runner without a driver).
std::string driver_major(const std::string& driver) {
  std::size_t n = 0;
  while (n < driver.size() && std::isdigit(static_cast<unsigned char>(driver[n])) != 0)
    ++n;
  return n == 0 ? "none" : driver.substr(0, n);
}

// The major a baseline's file name carries after "<stem>-", or "" when it is not one of stem's.
std::string major_in_name(const fs::path& file, const std::string& stem) {
  const std::string name = file.filename().string();
  const std::string prefix = stem + "-";
  if (!name.starts_with(prefix) || !name.ends_with(".json")) return "";
  std::string major = name.substr(prefix.size(), name.size() - prefix.size() - 5);
  if (major.empty()) return "";
  for (const char c : major) {
    if (std::isdigit(static_cast<unsigned char>(c)) == 0) return "";
  }
  return major;
}

std::string recorded_driver(const fs::path& file, const std::string& major) {
  const CompareInput input = load_compare_input(file);
  const auto it = input.environment.find("driver");
  return it != input.environment.end() && it->is_string() ? it->get<std::string>() : major;
}

std::string string_at(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

RunnerIdentity read_runner_identity(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_directory(file, ec)) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(ErrorKind::input, fmt::format("{}: cannot read", file.string()));
    const nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
    const auto devices = doc.is_object() ? doc.find("devices") : doc.end();
    if (doc.is_object() && !doc.contains("schema") && devices != doc.end()) {  // oomlab info
      if (!devices->is_array())
        throw Error(ErrorKind::input, fmt::format("{}: 'devices' must be a list", file.string()));
      return {.gpu = devices->empty() || !devices->front().is_object()
                         ? ""
                         : string_at(devices->front(), "name"),
              .driver = string_at(doc, "driver")};
    }
  }
  const CompareInput input = load_compare_input(file);  // its errors name the file and place
  const auto device = input.environment.find("device");
  return {.gpu = device != input.environment.end() && device->is_object()
                     ? string_at(*device, "name")
                     : "",
          .driver = string_at(input.environment, "driver")};
}

std::string baseline_stem(const std::string& gpu) {
  std::string stem;
  for (const char c : gpu) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      stem += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!stem.empty() && stem.back() != '-') {
      stem += '-';
    }
  }
  while (!stem.empty() && stem.back() == '-')
    stem.pop_back();
  return stem.empty() ? "no-gpu" : stem;
}

BaselineChoice choose_baseline(const fs::path& folder, const std::string& gpu,
                               const std::string& driver) {
  BaselineChoice choice{.gpu = gpu, .driver = driver};
  const std::string stem = baseline_stem(gpu);
  choice.own = folder / fmt::format("{}-{}.json", stem, driver_major(driver));
  std::error_code ec;
  if (fs::is_regular_file(choice.own, ec)) {
    choice.chosen = choice.own;
    choice.chosen_driver = recorded_driver(choice.own, driver_major(driver));
    return choice;
  }
  if (driver.empty() || !fs::is_directory(folder, ec)) return choice;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
    const std::string major = major_in_name(entry.path(), stem);
    if (major.empty() || !entry.is_regular_file(ec)) continue;
    const std::string recorded = recorded_driver(entry.path(), major);
    if (compare_versions(recorded, driver) >= 0) continue;  // a newer driver's, or this one's
    if (!choice.chosen || compare_versions(recorded, choice.chosen_driver) > 0) {
      choice.chosen = entry.path();
      choice.chosen_driver = recorded;
    }
  }
  return choice;
}

std::string baseline_choice_note(const BaselineChoice& choice) {
  const std::string gpu = choice.gpu.empty() ? "no GPU" : choice.gpu;
  if (!choice.chosen) {
    return fmt::format(
        "no baseline for {} at or below driver {} in {}: this night's run becomes "
        "{}",
        gpu, choice.driver.empty() ? "(none)" : choice.driver, choice.own.parent_path().string(),
        choice.own.string());
  }
  const std::string change =
      choice.chosen_driver == choice.driver
          ? fmt::format("driver {}", choice.driver)
          : fmt::format("driver {} → {}", choice.chosen_driver, choice.driver);
  if (!choice.upgrade()) return fmt::format("{} on {} ({})", choice.chosen->string(), gpu, change);
  return fmt::format(
      "{} on {} ({}: no baseline for driver {} yet, compared with the nearest older "
      "driver's; {} is written only if the comparison is clean)",
      choice.chosen->string(), gpu, change, driver_major(choice.driver),
      choice.own.filename().string());
}

}  // namespace oomlab
