// One contract, every backend (RMM-style typed suite): distinct blocks, OOM as a status and never
// a crash (1 PiB), recovery after OOM, zero-byte requests, probes that leave no trace.
// The CUDA backends skip visibly when no device is present.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <vector>

#include "allocators/backends.hpp"
#include "allocators/budget_cap.hpp"
#include "allocators/sim_allocator.hpp"
#include "device/device.hpp"
#include "pytorch/model/torch_backend.hpp"
#include "test_support.hpp"

namespace oomlab {
namespace {

using namespace oomlab::literals;
constexpr std::uint64_t kBudget = 256_MiB;

struct SimBackend {
  static constexpr const char* kName = "sim";
  static constexpr bool kNeedsDevice = false;
  static constexpr bool kReservesOnAllocate = true;
};
struct CappedSimBackend {  // the BudgetCap adaptor over another backend
  static constexpr const char* kName = "sim+cap";
  static constexpr bool kNeedsDevice = false;
  static constexpr bool kReservesOnAllocate = true;
};
struct CudaBackend {
  static constexpr const char* kName = "cuda";
  static constexpr bool kNeedsDevice = true;
  static constexpr bool kReservesOnAllocate = true;
};
struct AsyncBackend {
  static constexpr const char* kName = "async";
  static constexpr bool kNeedsDevice = true;
  static constexpr bool kReservesOnAllocate = true;
};
struct ManagedBackend {  // as a run uses it: capped at the budget
  static constexpr const char* kName = "managed";
  static constexpr bool kNeedsDevice = true;
  static constexpr bool kReservesOnAllocate = false;  // pages land on the device when touched
};

// `torch`, once per option that changes how it holds memory, and over every upstream the
// catalogue offers it (sim, cuda, async, managed: TorchUpstreams below checks that list).
template <bool OnDevice>
struct TorchWith {
  static constexpr bool kNeedsDevice = OnDevice;
  static constexpr bool kReservesOnAllocate = true;
};
struct TorchBackend : TorchWith<false> {
  static constexpr const char* kName = "torch";
  static void configure(Params& /*options*/) {}
};
struct TorchExpandableBackend : TorchWith<false> {
  static constexpr const char* kName = "torch+expandable_segments";
  static void configure(Params& options) { options.set("expandable_segments", true); }
};
struct TorchMaxSplitBackend : TorchWith<false> {
  static constexpr const char* kName = "torch+max_split_size";
  static void configure(Params& options) { options.set("max_split_size", Bytes{20_MiB}); }
};
struct TorchGarbageCollectionBackend : TorchWith<false> {  // it acts under a fraction cap only
  static constexpr const char* kName = "torch+garbage_collection_threshold";
  static void configure(Params& options) {
    options.set("garbage_collection_threshold", 0.5);
    options.set("budget_by", std::string("fraction"));
  }
};
struct TorchAsyncBackend : TorchWith<false> {
  static constexpr const char* kName = "torch+backend_async";
  static void configure(Params& options) { options.set("backend", std::string("async")); }
};
struct TorchOnCudaBackend : TorchWith<true> {
  static constexpr const char* kName = "torch+upstream_cuda";
  static void configure(Params& options) { options.set("upstream", std::string("cuda")); }
};
struct TorchOnCudaExpandableBackend : TorchWith<true> {  // pages of the virtual-memory API
  static constexpr const char* kName = "torch+upstream_cuda+expandable_segments";
  static void configure(Params& options) {
    options.set("upstream", std::string("cuda"));
    options.set("expandable_segments", true);
  }
};
struct TorchOnCudaAsyncBackend : TorchWith<true> {
  static constexpr const char* kName = "torch+upstream_cuda+backend_async";
  static void configure(Params& options) {
    options.set("upstream", std::string("cuda"));
    options.set("backend", std::string("async"));
  }
};

struct TorchOnAsyncBackend : TorchWith<true> {  // segments from a cudaMallocAsync pool
  static constexpr const char* kName = "torch+upstream_async";
  static void configure(Params& options) { options.set("upstream", std::string("async")); }
};
struct TorchOnManagedBackend : TorchWith<true> {  // segments of managed memory, capped
  static constexpr const char* kName = "torch+upstream_managed";
  static void configure(Params& options) { options.set("upstream", std::string("managed")); }
};

template <typename Backend>
std::unique_ptr<Allocator> make_for_contract(std::optional<int> device, Stream stream) {
  const BackendSite site{.budget_bytes = kBudget, .device = device, .stream = stream};
  if constexpr (requires(Params & p) { Backend::configure(p); }) {
    Params options(find_backend("torch")->options);
    Backend::configure(options);
    find_backend("torch")->validate(options);
    return make_backend(torch::torch_kind(), options, site);
  } else {
    const BackendInfo& info = *find_backend(Backend::kName);
    return make_backend(info.kind, Params(info.options), site);
  }
}

template <typename Backend>
class AllocatorContract : public ::testing::Test {
 protected:
  void SetUp() override {
    if constexpr (Backend::kNeedsDevice) {
      OOMLAB_REQUIRE_GPU();
      session_.emplace(0);
      allocator_ = make_for_contract<Backend>(0, session_->stream());
    } else if (std::string_view(Backend::kName) == "sim") {
      allocator_ = std::make_unique<SimAllocator>(SimAllocator::Options{.capacity_bytes = kBudget});
    } else if (std::string_view(Backend::kName) != "sim+cap") {
      allocator_ = make_for_contract<Backend>(std::nullopt, {});
    } else {
      allocator_ = std::make_unique<BudgetCap>(
          std::make_unique<SimAllocator>(SimAllocator::Options{.capacity_bytes = 1_TiB}), kBudget,
          64_KiB);
    }
  }
  void TearDown() override {
    allocator_.reset();
    if (session_) session_->synchronize();
  }

  Stream stream() const { return session_ ? session_->stream() : Stream{}; }

  std::optional<DeviceSession> session_;
  std::unique_ptr<Allocator> allocator_;
};

using Backends =
    ::testing::Types<SimBackend, CappedSimBackend, CudaBackend, AsyncBackend, ManagedBackend,
                     TorchBackend, TorchExpandableBackend, TorchMaxSplitBackend,
                     TorchGarbageCollectionBackend, TorchAsyncBackend, TorchOnCudaBackend,
                     TorchOnCudaExpandableBackend, TorchOnCudaAsyncBackend, TorchOnAsyncBackend,
                     TorchOnManagedBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int /*index*/) {
    std::string name = T::kName;
    std::replace(name.begin(), name.end(), '+', '_');
    return name;
  }
};
TYPED_TEST_SUITE(AllocatorContract, Backends, BackendNames);

TYPED_TEST(AllocatorContract, GivesDistinctBlocksAndTakesThemBack) {
  Allocator& a = *this->allocator_;
  std::vector<std::pair<void*, std::size_t>> blocks;
  std::set<void*> seen;
  for (const std::size_t size : {256UL, 4_KiB, 64_KiB, 1_MiB, 3_MiB, 8_MiB, 100UL, 2_MiB}) {
    const AllocResult r = a.allocate(size, this->stream());
    ASSERT_TRUE(r.ok()) << size;
    ASSERT_NE(r.ptr, nullptr);
    EXPECT_TRUE(seen.insert(r.ptr).second) << "pointer handed out twice";
    blocks.emplace_back(r.ptr, size);
  }
  for (const auto& [ptr, size] : blocks)
    a.deallocate(ptr, size, this->stream());
}

TYPED_TEST(AllocatorContract, OnePebibyteIsAnOomNotACrash) {
  Allocator& a = *this->allocator_;
  const AllocResult r = a.allocate(1ULL << 50U, this->stream());
  EXPECT_TRUE(is_oom(r.status)) << static_cast<int>(r.status);
  EXPECT_EQ(r.ptr, nullptr);
  const AllocResult after = a.allocate(1_MiB, this->stream());
  ASSERT_TRUE(after.ok()) << "the allocator must work after an OOM";
  a.deallocate(after.ptr, 1_MiB, this->stream());
}

TYPED_TEST(AllocatorContract, TheLargestSizeIsAnOomNotAWrapAround) {
  Allocator& a = *this->allocator_;
  for (const std::size_t bytes : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX / 2 + 1}) {
    const AllocResult r = a.allocate(bytes, this->stream());
    EXPECT_TRUE(is_oom(r.status)) << bytes << " gave status " << static_cast<int>(r.status);
    EXPECT_TRUE(is_oom(a.probe(bytes, this->stream())));
  }
}

TYPED_TEST(AllocatorContract, ZeroBytesIsSuccessWithANullPointer) {
  Allocator& a = *this->allocator_;
  const AllocResult r = a.allocate(0, this->stream());
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.ptr, nullptr);
  a.deallocate(r.ptr, 0, this->stream());
}

TYPED_TEST(AllocatorContract, ReservedCoversWhatIsLive) {
  Allocator& a = *this->allocator_;
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) {
    const AllocResult r = a.allocate(1_MiB, this->stream());
    ASSERT_TRUE(r.ok());
    blocks.push_back(r.ptr);
  }
  const MemoryState s = a.state();
  if constexpr (TypeParam::kReservesOnAllocate) {
    EXPECT_GE(s.reserved_bytes, 64_MiB);
    EXPECT_GE(a.reserved_bytes(), 64_MiB) << "the cheap figure follows growth too";
  }
  EXPECT_GE(s.own_bytes_bound, 64_MiB);
  EXPECT_GT(s.device_total_bytes, 0U);
  for (void* p : blocks)
    a.deallocate(p, 1_MiB, this->stream());
}

TYPED_TEST(AllocatorContract, ProbesLeaveNoTrace) {
  Allocator& a = *this->allocator_;
  const AllocResult held = a.allocate(4_MiB, this->stream());
  ASSERT_TRUE(held.ok());
  const MemoryState before = a.state();
  EXPECT_EQ(a.probe(64_MiB, this->stream()), AllocStatus::ok);
  EXPECT_TRUE(is_oom(a.probe(1ULL << 50U, this->stream())));
  const MemoryState after = a.state();
  EXPECT_LE(after.reserved_bytes, before.reserved_bytes + kDevicePageBytes);
  EXPECT_EQ(after.own_bytes_bound, before.own_bytes_bound);
  a.deallocate(held.ptr, 4_MiB, this->stream());
}

TYPED_TEST(AllocatorContract, TrimKeepsLiveBlocks) {
  Allocator& a = *this->allocator_;
  const AllocResult kept = a.allocate(2_MiB, this->stream());
  const AllocResult freed = a.allocate(32_MiB, this->stream());
  ASSERT_TRUE(kept.ok() && freed.ok());
  a.deallocate(freed.ptr, 32_MiB, this->stream());
  a.trim();
  EXPECT_GE(a.state().reserved_bytes, TypeParam::kReservesOnAllocate ? 2_MiB : 0);
  a.deallocate(kept.ptr, 2_MiB, this->stream());
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
