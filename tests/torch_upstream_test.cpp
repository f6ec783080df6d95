// `torch` over any upstream the catalogue has: the choices are the backends that serve one, the
// run's memory is the upstream's (a device's or not, held by a ballast or capped), torch over
// torch is refused, and so is expandable_segments where its pages could not be the upstream's.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "allocators/backends.hpp"
#include "oomlab/error.hpp"
#include "pytorch/model/torch_backend.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

Params torch_over(const std::string& upstream) {
  Params options(find_backend("torch")->options);
  options.set("upstream", upstream);
  return options;
}

const ParamDef& upstream_option() {
  const ParamSpec& spec = find_backend("torch")->options;
  return *std::find_if(spec.begin(), spec.end(),
                       [](const ParamDef& d) { return d.name == "upstream"; });
}

// The usage error validate gives these options, or "" when there is none.
std::string refusal(const Params& options) {
  try {
    find_backend("torch")->validate(options);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    return e.what();
  }
  return "";
}

TEST(TorchUpstreams, AreEveryBackendThatServesOneAndNotTorchItself) {
  std::vector<std::string> serving;
  for (const BackendInfo& b : backend_catalog()) {
    if (b.serves_upstream) serving.push_back(b.name);
  }
  EXPECT_EQ(serving, (std::vector<std::string>{"cuda", "async", "managed", "sim"}));
  EXPECT_EQ(upstream_option().choices, serving);
  EXPECT_NE(upstream_option().help.find("cuda, async, managed, sim; not torch itself"),
            std::string::npos)
      << upstream_option().help;
}

TEST(TorchUpstreams, TheRunsMemoryIsTheUpstreams) {
  EXPECT_EQ(memory_source(torch::torch_kind(), torch_over("managed")), BackendKind::managed);
  EXPECT_EQ(memory_source(BackendKind::cuda, Params{}), BackendKind::cuda);
  EXPECT_FALSE(uses_device(torch::torch_kind(), torch_over("sim")));
  for (const char* device : {"cuda", "async", "managed"})
    EXPECT_TRUE(uses_device(torch::torch_kind(), torch_over(device))) << device;
  EXPECT_TRUE(holds_ballast(torch::torch_kind(), torch_over("cuda")));
  EXPECT_TRUE(holds_ballast(torch::torch_kind(), torch_over("async")));
  EXPECT_FALSE(holds_ballast(torch::torch_kind(), torch_over("managed")))
      << "managed memory is capped by oomlab, not held to the budget by a ballast";
}

TEST(TorchUpstreams, TorchOverTorchIsAUsageError) {
  EXPECT_NE(refusal(torch_over("torch")).find("upstream=torch cannot serve torch's segments"),
            std::string::npos);
  for (const char* fine : {"sim", "cuda", "async", "managed"})
    EXPECT_EQ(refusal(torch_over(fine)), "") << fine;
}

TEST(TorchUpstreams, ExpandableSegmentsOnlyWhereThePagesAreTheUpstreams) {
  for (const char* refused : {"async", "managed"}) {
    Params options = torch_over(refused);
    options.set("expandable_segments", true);
    EXPECT_NE(refusal(options).find(std::string("expandable_segments over upstream=") + refused),
              std::string::npos)
        << refused;
  }
  for (const char* fine : {"sim", "cuda"}) {
    Params options = torch_over(fine);
    options.set("expandable_segments", true);
    EXPECT_EQ(refusal(options), "") << fine;
  }
}

// The same rule when expandable_segments comes from a snapshot's recorded settings.
TEST(TorchUpstreams, ARecordedExpandableSettingOverAsyncIsRefusedBeforeTheRun) {
  Params options = torch_over("async");
  const RecordedSettings recorded{.backend = "torch", .options = {{"expandable_segments", true}}};
  try {
    static_cast<void>(backend_info(torch::torch_kind()).settle(options, &recorded));
    FAIL() << "settle must refuse the recorded expandable_segments over async";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("expandable_segments over upstream=async"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace oomlab
