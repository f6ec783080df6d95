#include "device/cards.hpp"

#include <array>

#include "oomlab/units.hpp"

namespace oomlab {

namespace {

using namespace oomlab::literals;

// NVML's total (nvidia-smi's "Total"), not the data sheet's: ECC on GDDR cards and the driver's
// reserve make it less than the "16 GB" or "24 GB" sold (6.25% of a T4's 16 GiB goes to ECC).
constexpr std::string_view kModal =
    "nvidia-smi's total, as listed for that card in modal-labs/modal-client#2797";
constexpr std::array kCards = {
    Card{.name = "T4", .product = "Tesla T4", .total_bytes = 15'360_MiB, .source = kModal},
    Card{.name = "A10G",
         .product = "NVIDIA A10G",
         .total_bytes = 23'028_MiB,
         .source = "nvidia-smi on an A10G, driver 535.247.01, in NVIDIA/DCGM#232"},
    Card{.name = "A10", .product = "NVIDIA A10", .total_bytes = 23'028_MiB, .source = kModal},
    Card{.name = "L4", .product = "NVIDIA L4", .total_bytes = 23'034_MiB, .source = kModal},
    Card{.name = "RTX4090",
         .product = "NVIDIA GeForce RTX 4090",
         .total_bytes = 24'564_MiB,
         .source = "nvidia-smi on RTX 4090s, drivers 535.54.03 and 550.163.01, in "
                   "vllm-project/vllm#7553 and RLinf/RLinf#255"},
    Card{.name = "A100-40GB",
         .product = "NVIDIA A100-SXM4-40GB",
         .total_bytes = 40'960_MiB,
         .source = kModal},
    Card{.name = "L40S", .product = "NVIDIA L40S", .total_bytes = 46'068_MiB, .source = kModal},
    Card{.name = "H100-80GB",
         .product = "NVIDIA H100 80GB HBM3",
         .total_bytes = 81'559_MiB,
         .source = "NVML on the H100 here (its CUDA total is 81,079 MiB, ci/baselines; "
                   "tests/gpu_cards_test.cpp checks it), as in modal-labs/modal-client#2797"},
    Card{.name = "A100-80GB",
         .product = "NVIDIA A100-SXM4-80GB",
         .total_bytes = 81'920_MiB,
         .source = kModal},
    Card{.name = "H200",
         .product = "NVIDIA H200",
         .total_bytes = 143'771_MiB,
         .source = "NVML on the H200 here (its CUDA total is 143,156 MiB, ci/baselines; "
                   "tests/gpu_cards_test.cpp checks it), as nvidia-smi prints it on H200s"},
};

}  // namespace

std::span<const Card> known_cards() {
  return kCards;
}

const Card* card_named(std::string_view name) {
  for (const Card& card : kCards) {
    if (card.name == name) return &card;
  }
  return nullptr;
}

std::uint64_t kept_back_bytes(const DeviceFacts* device) {
  if (device == nullptr || !device->nvml_total_bytes || !device->free_bytes ||
      *device->free_bytes > *device->nvml_total_bytes)
    return kIdleKeptBackH100;
  return *device->nvml_total_bytes - *device->free_bytes;
}

std::uint64_t card_budget_bytes(const Card& card, std::uint64_t kept_back) {
  return card.total_bytes > kept_back ? card.total_bytes - kept_back : 0;
}

std::vector<const Card*> cards_holding(std::uint64_t bytes, std::uint64_t kept_back) {
  std::vector<const Card*> out;
  for (const Card& card : kCards) {
    if (card_budget_bytes(card, kept_back) >= bytes) out.push_back(&card);
  }
  return out;
}

}  // namespace oomlab
