// Named cards for --budget: "would it fit on a T4?" asked on whatever card is in hand. A card's
// budget is its total memory as NVML reports it (nvidia-smi's "Total"), less what the driver
// keeps back on the device in hand when idle (NVML's total less its free memory before the run).
// An approximation of the card: its architecture's kernels, CUDA context and libraries' workspaces
// differ from the device in hand's, and so may what its driver keeps back.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "device/device.hpp"

namespace oomlab {

struct Card {
  std::string_view name;     // as --budget takes it: "H100-80GB"
  std::string_view product;  // as NVML names it: "NVIDIA H100 80GB HBM3"
  std::uint64_t total_bytes = 0;
  std::string_view source;  // where the figure comes from
};

// Smallest first.
[[nodiscard]] std::span<const Card> known_cards();
// By its table name (exact; the CLI matches what users type to it).
[[nodiscard]] const Card* card_named(std::string_view name);

// What the driver kept back of an idle H100 80GB HBM3 here (driver 580.159.04): NVML's total
// less its free memory, 85,014,085,632 B free of 85,520,809,984 (ci/baselines, nvidia-smi): the
// figure used where no device is in hand (the sim).
inline constexpr std::uint64_t kIdleKeptBackH100 = 506'724'352;

// What the driver keeps back of `device` when idle: NVML's total less NVML's free memory, read
// before the run. The H100's figure when NVML says nothing (no device, a stand-in).
[[nodiscard]] std::uint64_t kept_back_bytes(const DeviceFacts* device);

// The card's budget on a device that keeps `kept_back` bytes back.
[[nodiscard]] std::uint64_t card_budget_bytes(const Card& card, std::uint64_t kept_back);

// The cards whose budget holds `bytes`, smallest first.
[[nodiscard]] std::vector<const Card*> cards_holding(std::uint64_t bytes, std::uint64_t kept_back);

}  // namespace oomlab
