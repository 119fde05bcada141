// TensorSpill: the first runner's tensors held in memory up to a budget, the rest in the spill
// file; every record reads back exactly, whichever tier it waits in.
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "parity/compare/layerwise.h"
#include "parity/core/error.h"

namespace parity::compare {
namespace {

// `count` float32 values counting up from `start` (count * 4 bytes; multiples of 16 values keep
// each record's file offset free of alignment padding, so the file's size is the records' sum).
Tensor counting(int64_t count, float start) {
  std::vector<float> values(static_cast<std::size_t>(count));
  std::iota(values.begin(), values.end(), start);
  return Tensor::from_bytes(DType::kFloat32, {count}, values.data(), values.size() * sizeof(float));
}

struct Appended {
  std::string name;
  Tensor tensor;
};

std::vector<Appended> append_all(TensorSpill& spill, const std::vector<int64_t>& counts) {
  std::vector<Appended> appended;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    Appended entry{"t" + std::to_string(i), counting(counts[i], static_cast<float>(i * 1000))};
    spill.append(0, entry.name, entry.tensor, "node_" + entry.name, "Relu");
    appended.push_back(std::move(entry));
  }
  return appended;
}

uint64_t total_bytes(const std::vector<Appended>& appended) {
  uint64_t total = 0;
  for (const auto& entry : appended) total += entry.tensor.byte_size();
  return total;
}

TEST(TensorSpillBudget, ZeroBudgetSendsEveryTensorToTheFile) {
  TensorSpill spill({}, /*memory_budget=*/0);
  auto appended = append_all(spill, {16, 32, 0, 64});
  for (const auto& record : spill.records()) EXPECT_FALSE(record.held) << record.name;
  EXPECT_EQ(spill.bytes_written(), total_bytes(appended));
  EXPECT_EQ(spill.bytes_held(), 0u);
  for (const auto& entry : appended) EXPECT_TRUE(identical(spill.take(*spill.find(0, entry.name)), entry.tensor));
}

TEST(TensorSpillBudget, LargeBudgetHoldsEverythingAndMakesNoFile) {
  TensorSpill spill("/nonexistent-folder-for-the-spill", /*memory_budget=*/uint64_t{1} << 30);
  auto appended = append_all(spill, {16, 32, 0, 64});
  for (const auto& record : spill.records()) EXPECT_TRUE(record.held) << record.name;
  EXPECT_EQ(spill.bytes_written(), 0u);
  EXPECT_EQ(spill.bytes_held(), total_bytes(appended));
  // Held records read back any number of times before they are taken, then hand their tensor over.
  const auto* first = spill.find(0, "t0");
  EXPECT_TRUE(identical(spill.read(*first), appended[0].tensor));
  EXPECT_TRUE(identical(spill.read(*first), appended[0].tensor));
  for (const auto& entry : appended) EXPECT_TRUE(identical(spill.take(*spill.find(0, entry.name)), entry.tensor));
  EXPECT_EQ(spill.bytes_held(), 0u);
  EXPECT_THROW(spill.take(*first), InternalError);
}

TEST(TensorSpillBudget, BudgetExceededMidwaySendsTheRestToTheFileExactly) {
  // 1024 bytes of budget: t0 (256) and t1 (512) fit, t2 (2048, larger than the whole budget) and
  // t3 (512, over what is left) go to the file, t4 (128) still fits.
  TensorSpill spill({}, /*memory_budget=*/1024);
  auto appended = append_all(spill, {64, 128, 512, 128, 32});
  std::vector<bool> held;
  for (const auto& record : spill.records()) held.push_back(record.held);
  EXPECT_EQ(held, (std::vector<bool>{true, true, false, false, true}));
  EXPECT_EQ(spill.bytes_written(), 2048u + 512u);
  EXPECT_EQ(spill.bytes_held(), 256u + 512u + 128u);
  for (const auto& record : spill.records()) EXPECT_EQ(record.order, &record - spill.records().data());
  for (const auto& entry : appended) {
    Tensor back = spill.take(*spill.find(0, entry.name));
    EXPECT_TRUE(identical(back, entry.tensor)) << entry.name;
  }
  EXPECT_EQ(spill.bytes_held(), 0u);
}

TEST(TensorSpillBudget, FiledRecordsReadAfterTheHeldOnesAreTaken) {
  TensorSpill spill({}, /*memory_budget=*/512);
  auto appended = append_all(spill, {128, 256, 16});  // t0 held, t1 filed, t2 filed (only 0 left)
  ASSERT_TRUE(spill.find(0, "t0")->held);
  ASSERT_FALSE(spill.find(0, "t1")->held);
  ASSERT_FALSE(spill.find(0, "t2")->held);
  EXPECT_TRUE(identical(spill.take(*spill.find(0, "t0")), appended[0].tensor));
  // A filed record can be read again: the file keeps it.
  EXPECT_TRUE(identical(spill.take(*spill.find(0, "t2")), appended[2].tensor));
  EXPECT_TRUE(identical(spill.read(*spill.find(0, "t2")), appended[2].tensor));
  EXPECT_TRUE(identical(spill.take(*spill.find(0, "t1")), appended[1].tensor));
}

TEST(TensorSpillBudget, HeldTensorsAcrossMemoryChunksReadBackExactly) {
  // Held tensors share 64 MiB chunks: 40 MiB opens one, the next 40 MiB does not fit in what is left
  // and opens another, a small one fits after it, and 70 MiB (more than a chunk) gets one of its own.
  TensorSpill spill({}, /*memory_budget=*/uint64_t{1} << 30);
  const int64_t mib = (int64_t{1} << 20) / 4;  // float32 values in a MiB
  auto appended = append_all(spill, {40 * mib, 40 * mib, 256, 70 * mib});
  for (const auto& record : spill.records()) EXPECT_TRUE(record.held) << record.name;
  EXPECT_EQ(spill.bytes_written(), 0u);
  for (const auto& entry : appended) {
    Tensor back = spill.take(*spill.find(0, entry.name));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(back.raw()) % 64, 0u) << entry.name;
    EXPECT_TRUE(identical(back, entry.tensor)) << entry.name;
  }
}

TEST(TensorSpillBudget, AReplacedHeldRecordFreesItsBudget) {
  TensorSpill spill({}, /*memory_budget=*/512);
  Tensor first = counting(128, 0), second = counting(128, 7);
  spill.append(0, "x", first, "n", "Relu");
  spill.append(0, "x", second, "n", "Relu");  // replaces the first in the index
  EXPECT_EQ(spill.bytes_held(), 512u);
  EXPECT_TRUE(spill.find(0, "x")->held);
  EXPECT_TRUE(identical(spill.take(*spill.find(0, "x")), second));
}

// An immutable tensor is held by sharing its storage (no copy) while it fits in the budget; past
// the budget it goes to the file like any other, and a copy made by append() is a separate buffer.
TEST(TensorSpillBudget, SharedTensorsAreHeldWithoutACopyWithinTheBudget) {
  TensorSpill spill({}, /*memory_budget=*/1024);
  Tensor shared = counting(128, 0), copied = counting(64, 5), past_budget = counting(128, 9), empty = counting(0, 0);
  spill.append_shared(0, "shared", shared, "n", "Relu");
  spill.append(0, "copied", copied, "n", "Relu");
  spill.append_shared(0, "past_budget", past_budget, "n", "Relu");
  spill.append_shared(0, "empty", empty, "n", "Relu");
  EXPECT_EQ(spill.bytes_held(), 512u + 256u);
  EXPECT_TRUE(spill.find(0, "shared")->held);
  EXPECT_FALSE(spill.find(0, "past_budget")->held);
  EXPECT_EQ(spill.bytes_written(), 512u);
  EXPECT_EQ(spill.read(*spill.find(0, "shared")).raw(), shared.raw());
  EXPECT_NE(spill.read(*spill.find(0, "copied")).raw(), copied.raw());
  Tensor taken = spill.take(*spill.find(0, "shared"));
  EXPECT_EQ(taken.raw(), shared.raw());
  EXPECT_EQ(spill.bytes_held(), 256u);
  EXPECT_TRUE(identical(spill.take(*spill.find(0, "past_budget")), past_budget));
  EXPECT_TRUE(identical(spill.take(*spill.find(0, "empty")), empty));
}

TEST(TensorSpillBudget, TheFileIsMadeOnlyWhenATensorNeedsIt) {
  TensorSpill fits("/nonexistent-folder-for-the-spill", /*memory_budget=*/1024);
  EXPECT_NO_THROW(fits.append(0, "small", counting(16, 0), "n", "Relu"));
  try {
    fits.append(0, "large", counting(512, 0), "n", "Relu");
    ADD_FAILURE() << "no error for a spill file in a missing folder";
  } catch (const FileError& error) {
    EXPECT_NE(std::string(error.what()).find("/nonexistent-folder-for-the-spill"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace parity::compare
