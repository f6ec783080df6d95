// One contract, every registered backend (RMM instantiates one suite for every resource): distinct
// blocks, OOM as a status and never a crash (1 PiB, the largest sizes), recovery after an OOM,
// zero-byte requests, probes that leave no trace, trim that keeps live blocks. The cases come from
// the registry, not from a list here: the engine's backends, every wing's, and a plugin's (Toy's
// `slab`, loaded by this binary's main before the suite is instantiated), each with its default
// options and with each of its BackendInfo::contract_options; and BudgetCap, the adaptor a run
// puts over a backend that does not enforce the budget itself. Backends that use the device skip
// visibly without one.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "allocators/backends.hpp"
#include "allocators/budget_cap.hpp"
#include "allocators/sim_allocator.hpp"
#include "cli/parse.hpp"
#include "device/device.hpp"
#include "oomlab/registry.hpp"
#include "oomlab/trace_format.hpp"
#include "plugin/plugin_loader.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
constexpr std::uint64_t kBudget = 256_MiB;
constexpr std::string_view kCapped = "sim under the budget cap";

struct ContractCase {
  std::string allocator;  // as --allocator spells it ("torch:upstream=cuda"), or kCapped
};

// Every registered backend that can be built, with its defaults and each of its contract options.
std::vector<ContractCase> contract_cases() {
  std::vector<ContractCase> cases;
  for (const BackendInfo& b : backend_catalog()) {
    if (b.make == nullptr) continue;  // auto: resolved to another before anything is built
    cases.push_back({b.name});
    for (const std::string& options : b.contract_options)
      cases.push_back({b.name + ":" + options});
  }
  cases.push_back({std::string(kCapped)});
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<ContractCase>& info) {
  std::string name = info.param.allocator;
  std::replace_if(
      name.begin(), name.end(), [](char c) { return std::isalnum(c) == 0; }, '_');
  return name;
}

class BackendContract : public ::testing::TestWithParam<ContractCase> {
 protected:
  void SetUp() override {
    if (GetParam().allocator == kCapped) {
      allocator_ = std::make_unique<BudgetCap>(
          std::make_unique<SimAllocator>(SimAllocator::Options{.capacity_bytes = 1_TiB}), kBudget,
          64_KiB);
      return;
    }
    const cli::AllocatorChoice choice = cli::parse_allocator(GetParam().allocator);
    const BackendInfo& source = backend_info(memory_source(choice.kind, choice.options));
    reserves_on_allocate_ = source.reserves_on_allocate;
    if (uses_device(choice.kind, choice.options)) {
      OOMLAB_REQUIRE_GPU();
      session_.emplace(0);
    }
    const BackendSite site{.budget_bytes = kBudget,
                           .device = session_ ? std::optional<int>(0) : std::nullopt,
                           .stream = stream()};
    allocator_ = make_backend(choice.kind, choice.options, site);
  }
  void TearDown() override {
    allocator_.reset();
    if (session_) session_->synchronize();
  }

  [[nodiscard]] Stream stream() const { return session_ ? session_->stream() : Stream{}; }

  std::optional<DeviceSession> session_;
  std::unique_ptr<Allocator> allocator_;
  bool reserves_on_allocate_ = true;
};

TEST_P(BackendContract, GivesDistinctBlocksAndTakesThemBack) {
  Allocator& a = *allocator_;
  std::vector<std::pair<void*, std::size_t>> blocks;
  std::set<void*> seen;
  for (const std::size_t size : {256UL, 4_KiB, 64_KiB, 1_MiB, 3_MiB, 8_MiB, 100UL, 2_MiB}) {
    const AllocResult r = a.allocate(size, stream());
    ASSERT_TRUE(r.ok()) << size;
    ASSERT_NE(r.ptr, nullptr);
    EXPECT_TRUE(seen.insert(r.ptr).second) << "pointer handed out twice";
    blocks.emplace_back(r.ptr, size);
  }
  for (const auto& [ptr, size] : blocks)
    a.deallocate(ptr, size, stream());
}

TEST_P(BackendContract, OnePebibyteIsAnOomNotACrash) {
  Allocator& a = *allocator_;
  const AllocResult r = a.allocate(1ULL << 50U, stream());
  EXPECT_TRUE(is_oom(r.status)) << static_cast<int>(r.status);
  EXPECT_EQ(r.ptr, nullptr);
  const AllocResult after = a.allocate(1_MiB, stream());
  ASSERT_TRUE(after.ok()) << "the allocator must work after an OOM";
  a.deallocate(after.ptr, 1_MiB, stream());
}

TEST_P(BackendContract, TheLargestSizeIsAnOomNotAWrapAround) {
  Allocator& a = *allocator_;
  for (const std::size_t bytes : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 2 + 1}) {
    const AllocResult r = a.allocate(bytes, stream());
    EXPECT_TRUE(is_oom(r.status)) << bytes << " gave status " << static_cast<int>(r.status);
    EXPECT_TRUE(is_oom(a.probe(bytes, stream())));
  }
}

TEST_P(BackendContract, ZeroBytesIsSuccessWithANullPointer) {
  Allocator& a = *allocator_;
  const AllocResult r = a.allocate(0, stream());
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.ptr, nullptr);
  a.deallocate(r.ptr, 0, stream());
}

TEST_P(BackendContract, ReservedCoversWhatIsLive) {
  Allocator& a = *allocator_;
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) {
    const AllocResult r = a.allocate(1_MiB, stream());
    ASSERT_TRUE(r.ok());
    blocks.push_back(r.ptr);
  }
  const MemoryState s = a.state();
  if (reserves_on_allocate_) {
    EXPECT_GE(s.reserved_bytes, 64_MiB);
    EXPECT_GE(a.reserved_bytes(), 64_MiB) << "the cheap figure follows growth too";
  }
  EXPECT_GE(s.own_bytes_bound, 64_MiB);
  EXPECT_GT(s.device_total_bytes, 0U);
  for (void* p : blocks)
    a.deallocate(p, 1_MiB, stream());
}

TEST_P(BackendContract, ProbesLeaveNoTrace) {
  Allocator& a = *allocator_;
  const AllocResult held = a.allocate(4_MiB, stream());
  ASSERT_TRUE(held.ok());
  const MemoryState before = a.state();
  EXPECT_EQ(a.probe(64_MiB, stream()), AllocStatus::ok);
  EXPECT_TRUE(is_oom(a.probe(1ULL << 50U, stream())));
  const MemoryState after = a.state();
  EXPECT_LE(after.reserved_bytes, before.reserved_bytes + kDevicePageBytes);
  EXPECT_EQ(after.own_bytes_bound, before.own_bytes_bound);
  a.deallocate(held.ptr, 4_MiB, stream());
}

TEST_P(BackendContract, TrimKeepsLiveBlocks) {
  Allocator& a = *allocator_;
  const AllocResult kept = a.allocate(2_MiB, stream());
  const AllocResult freed = a.allocate(32_MiB, stream());
  ASSERT_TRUE(kept.ok() && freed.ok());
  a.deallocate(freed.ptr, 32_MiB, stream());
  a.trim();
  EXPECT_GE(a.state().reserved_bytes, reserves_on_allocate_ ? 2_MiB : 0);
  a.deallocate(kept.ptr, 2_MiB, stream());
}

INSTANTIATE_TEST_SUITE_P(Registered, BackendContract, ::testing::ValuesIn(contract_cases()),
                         case_name);

// The suite covers the registry: every backend that can be built is a case, the plugin's too,
// and every contract option of each.
TEST(BackendContractCases, AreEveryRegisteredBackendAndThePlugins) {
  std::set<std::string> names;
  for (const ContractCase& c : contract_cases())
    names.insert(c.allocator.substr(0, c.allocator.find(':')));
  for (const BackendInfo& b : backend_catalog()) {
    if (b.make != nullptr) {
      EXPECT_TRUE(names.contains(b.name)) << b.name;
    }
  }
  for (const std::string name : {"sim", "cuda", "async", "managed", "torch", "slab"})
    EXPECT_TRUE(names.contains(name)) << name;
}

TEST(BudgetCap, RefusesPastTheBudgetBeforeTheBackendIsAsked) {
  BudgetCap cap(std::make_unique<SimAllocator>(SimAllocator::Options{.capacity_bytes = 1_TiB}),
                1_MiB, 64_KiB);
  std::vector<void*> blocks;
  for (int i = 0; i < 16; ++i)
    blocks.push_back(cap.allocate(100, {}).ptr);  // 16 x 64 KiB charged
  EXPECT_EQ(cap.accounted_bytes(), 1_MiB);
  EXPECT_EQ(cap.allocate(1, {}).status, AllocStatus::budget_cap);
  EXPECT_EQ(cap.probe(64_KiB, {}), AllocStatus::budget_cap);
  cap.deallocate(blocks.back(), 100, {});
  EXPECT_TRUE(cap.allocate(64_KiB, {}).ok());
  EXPECT_EQ(cap.allocate(UINT64_MAX, {}).status, AllocStatus::budget_cap) << "no wrap-around";
}

}  // namespace
}  // namespace oomlab

// The suite's cases are read from the registry when GoogleTest instantiates it: Toy's plugin
// (tests/toy_framework/) is loaded first, as `oomlab --plugin` loads one, after the built-in
// catalogues so that its names are checked against them.
int main(int argc, char** argv) {
  try {
    static_cast<void>(oomlab::backend_catalog());
    static_cast<void>(oomlab::trace::formats());
    static_cast<void>(oomlab::load_plugin(oomlab::testing::test_plugin("toy_framework"),
                                          oomlab::Registry::global()));
  } catch (const std::exception& e) {
    std::cerr << "backend contract: " << e.what() << '\n';
    return 1;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
