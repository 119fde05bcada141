// Calibration from a FeedStream: the feeds are taken as the runners ask for them, so the feeds held
// at once are bounded by the runners and the stack size, not by the number of batches; a stream that
// fails part way raises its error.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "parity/core/feed_stream.h"
#include "parity/quantize/calibrator.h"
#include "test_onnxrt_runner_helpers.h"

namespace parity::quantize {
namespace {

using runtime::onnxrt_testing::chain_model;

std::atomic<int> live_feeds{0};
std::atomic<int> most_live_feeds{0};

// A feed tensor's memory that counts how many such tensors are alive.
class CountedStorage final : public Storage {
 public:
  explicit CountedStorage(std::size_t size) : bytes_(size) {
    const int now = ++live_feeds;
    int most = most_live_feeds.load();
    while (now > most && !most_live_feeds.compare_exchange_weak(most, now)) {
    }
  }
  ~CountedStorage() override { --live_feeds; }
  std::byte* data() override { return bytes_.data(); }
  std::size_t size() const override { return bytes_.size(); }

 private:
  std::vector<std::byte> bytes_;
};

// `count` feeds x [2, 4] ~ N(0, 1), made as they are taken; throws at feed `fail_at` when given.
class CountingStream final : public FeedStream {
 public:
  CountingStream(std::size_t count, std::size_t fail_at = SIZE_MAX) : count_(count), fail_at_(fail_at) {}

  std::optional<NamedTensors> next() override {
    if (taken_ == count_) return std::nullopt;
    if (taken_ == fail_at_) raise<InvalidInputError>("the test's data loader failed at feed {}", taken_);
    ++taken_;
    auto storage = std::make_shared<CountedStorage>(8 * sizeof(float));
    float values[8];
    for (float& v : values) v = normal_(rng_);
    std::memcpy(storage->data(), values, sizeof values);
    return NamedTensors{{"x", Tensor::borrow(DType::kFloat32, {2, 4}, storage)}};
  }

 private:
  std::size_t count_, fail_at_, taken_ = 0;
  std::mt19937 rng_{11};
  std::normal_distribution<float> normal_;
};

struct Runners {
  std::vector<std::unique_ptr<runtime::OnnxrtRunner>> owned;
  std::vector<runtime::Runner*> pointers;
  explicit Runners(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) {
      runtime::OnnxrtOptions options;
      options.intra_op_threads = 1;
      owned.push_back(std::make_unique<runtime::OnnxrtRunner>(chain_model().loader(), options));
      pointers.push_back(owned.back().get());
    }
  }
};

TEST(CalibrationStream, FeedsHeldAtOnceAreBoundedByTheRunnersNotTheBatches) {
  // chain_model's activations are 32 bytes a feed, so stacks take the most feeds (16); three runners
  // hold at most a stack each, plus the feed that begins the next range.
  Runners runners(3);
  CountingStream stream(1000);
  most_live_feeds = 0;
  CalibrationSettings settings;
  settings.algo = CalibrationAlgo::kEntropy;
  const CalibrationResult result = calibrate(runners.pointers, {"r", "m"}, stream, settings, {"x", "y"});
  EXPECT_EQ(result.batches, 1000);
  EXPECT_GT(result.histograms.at("m").count(), 0);
  EXPECT_EQ(live_feeds.load(), 0);
  EXPECT_GE(most_live_feeds.load(), 1);
  EXPECT_LE(most_live_feeds.load(), 3 * 16 + 2) << "feeds held at once";
}

TEST(CalibrationStream, TheSameStatisticsAsTheListOfTheSameFeeds) {
  std::vector<NamedTensors> list;
  CountingStream source(300);
  while (auto feed = source.next()) list.push_back(std::move(*feed));
  CalibrationSettings settings;
  settings.algo = CalibrationAlgo::kPercentile;
  Runners one(2), two(2);
  CountingStream streamed(300);
  const CalibrationResult from_list = calibrate(one.pointers, {"r", "m"}, list, settings, {"x", "y"});
  const CalibrationResult from_stream = calibrate(two.pointers, {"r", "m"}, streamed, settings, {"x", "y"});
  for (const char* name : {"r", "m"}) {
    EXPECT_EQ(from_list.histograms.at(name).bins(), from_stream.histograms.at(name).bins()) << name;
    EXPECT_EQ(from_list.scales.at(name), from_stream.scales.at(name)) << name;
  }
}

TEST(CalibrationStream, AStreamThatFailsPartWayRaisesItsErrorOnWhicheverRunnerTookIt) {
  Runners runners(3);
  CountingStream stream(500, 230);
  CalibrationSettings settings;
  try {
    calibrate(runners.pointers, {"r", "m"}, stream, settings, {"x", "y"});
    FAIL() << "no error";
  } catch (const InvalidInputError& error) {
    EXPECT_NE(std::string(error.what()).find("failed at feed 230"), std::string::npos) << error.what();
  }
}

TEST(CalibrationStream, AnEmptyStreamIsAnError) {
  Runners runners(1);
  CountingStream stream(0);
  CalibrationSettings settings;
  EXPECT_THROW(calibrate(runners.pointers, {"r", "m"}, stream, settings, {"x", "y"}), InvalidInputError);
}

TEST(FeedStream, AListIsTakenInOrderAndKnowsItsSize) {
  std::vector<NamedTensors> feeds;
  for (int i = 0; i < 3; ++i) feeds.push_back({{"x", Tensor::zeros(DType::kInt64, {static_cast<int64_t>(i + 1)})}});
  auto stream = feed_stream_of(std::move(feeds));
  EXPECT_EQ(stream->size(), 3u);
  for (int64_t i = 1; i <= 3; ++i) {
    auto feed = stream->next();
    ASSERT_TRUE(feed);
    EXPECT_EQ(feed->front().second.shape(), Shape{i});
  }
  EXPECT_FALSE(stream->next());
  EXPECT_FALSE(stream->next());
}

}  // namespace
}  // namespace parity::quantize
