// The pickle reader: containers filled in batches keep their items in order, a value's byte is
// found again when a message needs it, and a broken snapshot is refused in one line at its byte.
// The address set the snapshot's history is walked with agrees with std::unordered_set.
#include "pytorch/trace/pickle.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <unordered_set>

#include "oomlab/error.hpp"
#include "test_support.hpp"
#include "trace/address_set.hpp"
#include "trace/trace.hpp"

namespace oomlab {

using namespace oomlab::torch;  // the PyTorch wing, whose code this drives
namespace {

namespace fs = std::filesystem;
using torch::pickle::Document;
using torch::pickle::Kind;

// [1, {'a': 3}, {'b': 6}, 7], its list filled by two APPENDS with a dict filled between them.
const std::string kBatches(
    "\x80\x04]("
    "K\x01}(\x8c\x01"
    "aK\x03ue"
    "(}(\x8c\x01"
    "bK\x06uK\x07"
    "e.",
    28);

TEST(PickleDocument, KeepsItemsInOrder_WhenContainersFillInBatches) {
  const Document doc = Document::read(kBatches, "batches.pickle");
  ASSERT_EQ(doc.root().kind, Kind::list);
  const auto items = doc.items(doc.root());
  ASSERT_EQ(items.size(), 4U);
  EXPECT_EQ(doc.node(items[0]).integer(), 1);
  ASSERT_NE(doc.get(doc.node(items[1]), "a"), nullptr);
  EXPECT_EQ(doc.get(doc.node(items[1]), "a")->integer(), 3);
  ASSERT_NE(doc.get(doc.node(items[2]), "b"), nullptr);
  EXPECT_EQ(doc.get(doc.node(items[2]), "b")->integer(), 6);
  EXPECT_EQ(doc.get(doc.node(items[2]), "a"), nullptr);
  EXPECT_EQ(doc.node(items[3]).integer(), 7);
}

TEST(PickleDocument, FindsAValuesByteAgain_ForAMessage) {
  const Document doc = Document::read(kBatches, "batches.pickle");
  const auto items = doc.items(doc.root());
  EXPECT_EQ(doc.offset(doc.root()), 2U);
  EXPECT_EQ(doc.offset(doc.node(items[2])), 16U);  // the second dict's EMPTY_DICT
  EXPECT_EQ(doc.offset(doc.node(items[3])), 24U);  // the BININT1 of 7
}

std::string error_of(const fs::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary) << bytes;
  try {
    (void)trace::load(file, {});
  } catch (const Error& e) {
    fs::remove(file);
    return e.what();
  }
  fs::remove(file);
  return "accepted";
}

std::string sample() {
  std::ifstream in(fs::path(testing::test_data_dir()) / "pytorch_gpt_fp32_snapshot.pickle",
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// pickletools on the sample: a LONG1 (10 bytes) starts at 599,994; byte 700,000 is a LONG_BINGET.
TEST(PickleSnapshot, TruncatedSample_IsRefusedAtTheOpcodeItEndsInside) {
  const fs::path file = fs::temp_directory_path() / "oomlab_truncated_sample.pickle";
  EXPECT_EQ(error_of(file, sample().substr(0, 600'000)),
            file.string() + ": byte 599994: the file ends inside LONG1");
}

TEST(PickleSnapshot, CorruptedOpcodeInTheSample_IsRefusedAtItsByte) {
  const fs::path file = fs::temp_directory_path() / "oomlab_corrupted_sample.pickle";
  std::string bytes = sample();
  bytes[700'000] = '\xff';
  EXPECT_EQ(error_of(file, bytes),
            file.string() +
                ": byte 700000: opcode 0xff is not one a data-only pickle of protocol 2 to 5 uses");
}

// pickle.dumps({'device_traces': [[{'action': 'alloc', 'addr': 1, 'size': 'big'}]]}, protocol=4):
// the 'big' is at byte 69.
TEST(PickleSnapshot, ValueOfTheWrongType_NamesItsEntryAndByte) {
  const std::string bytes(
      "\x80\x04\x95\x45\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x0d"
      "device_traces\x94]\x94]\x94}\x94(\x8c\x06"
      "action\x94\x8c\x05"
      "alloc\x94\x8c\x04"
      "addr\x94K\x01\x8c\x04"
      "size\x94\x8c\x03"
      "big\x94uaas.",
      80);
  const fs::path file = fs::temp_directory_path() / "oomlab_size_type.pickle";
  EXPECT_EQ(error_of(file, bytes),
            file.string() + ": device_traces[0][0] (byte 69): 'size' is not an integer");
}

// Addresses from a small range (so that probes collide and erases shift runs back), 0 among them.
TEST(AddressSet, AgreesWithUnorderedSet_OverRandomInsertsAndErases) {
  trace::AddressSet set;
  std::unordered_set<std::uint64_t> reference;
  std::mt19937_64 rng(16);
  for (int step = 0; step < 200'000; ++step) {
    const std::uint64_t address = (rng() % 5'000) * 512;
    if (rng() % 3 != 0) {
      ASSERT_EQ(set.insert(address), reference.insert(address).second) << step;
    } else {
      ASSERT_EQ(set.erase(address), reference.erase(address) == 1) << step;
    }
    const std::uint64_t probe = (rng() % 5'000) * 512;
    ASSERT_EQ(set.contains(probe), reference.contains(probe)) << step;
  }
}

}  // namespace
}  // namespace oomlab
