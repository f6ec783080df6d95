// The card table's figure for the device in hand (H100 80GB HBM3, H200), checked against NVML on
// it: the table says "measured here" for those two, and this is the measurement.
#include <gtest/gtest.h>

#include "device/cards.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

TEST(GpuCards, TheTablesFigureIsNvmlsTotalForTheDeviceInHand) {
  OOMLAB_REQUIRE_GPU();
  const Environment env = probe_environment();
  const DeviceFacts& d = env.devices.front();
  if (!d.nvml_total_bytes) GTEST_SKIP() << "NVML gave no total for " << d.name;
  const Card* card = nullptr;
  for (const Card& c : known_cards()) {
    if (c.product == d.name) card = &c;
  }
  if (card == nullptr) GTEST_SKIP() << d.name << " is not in the card table";
  EXPECT_EQ(card->total_bytes, *d.nvml_total_bytes)
      << card->name << ": NVML says " << *d.nvml_total_bytes << " B, CUDA " << d.total_bytes;
  // On the card itself, the card's budget is what NVML calls free when idle.
  ASSERT_TRUE(d.free_bytes);
  EXPECT_EQ(card_budget_bytes(*card, kept_back_bytes(&d)), *d.free_bytes);
  std::cout << card->name << ": NVML total " << *d.nvml_total_bytes << " B, free " << *d.free_bytes
            << " B, kept back " << kept_back_bytes(&d) << " B, CUDA total " << d.total_bytes
            << " B\n";
}

}  // namespace
}  // namespace oomlab
