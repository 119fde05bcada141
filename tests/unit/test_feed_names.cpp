// runtime::match_feed_names: the feed the model asks for, found as Polygraphy's data loader cache finds
// it (exact name, then a case-insensitive substring either way, then the input's position).
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "parity/runtime/runner.h"

namespace parity::runtime {
namespace {

Tensor scalar(float value) {
  Tensor tensor = Tensor::zeros(DType::kFloat32, Shape{1});
  tensor.mutable_data<float>()[0] = value;
  return tensor;
}

TensorMetadata inputs(const std::vector<std::string>& names) {
  TensorMetadata metadata;
  for (const auto& name : names) metadata.add(name, DType::kFloat32, std::vector<Dim>{Dim::fixed(1)});
  return metadata;
}

std::vector<std::pair<std::string, float>> contents(const NamedTensors& feed) {
  std::vector<std::pair<std::string, float>> out;
  for (const auto& [name, tensor] : feed) out.emplace_back(name, tensor.data<float>()[0]);
  return out;
}

using Contents = std::vector<std::pair<std::string, float>>;

TEST(FeedNames, ExactNamesWinAndFollowTheModelsOrder) {
  NamedTensors feed;
  feed.emplace_back("mask", scalar(2));
  feed.emplace_back("input", scalar(1));
  match_feed_names(inputs({"input", "mask"}), feed);
  EXPECT_EQ(contents(feed), (Contents{{"input", 1}, {"mask", 2}}));
}

TEST(FeedNames, CaseInsensitiveSubstringInEitherDirection) {
  NamedTensors feed;
  feed.emplace_back("X", scalar(1));
  feed.emplace_back("attention_mask", scalar(2));
  match_feed_names(inputs({"x", "Mask"}), feed);
  EXPECT_EQ(contents(feed), (Contents{{"x", 1}, {"Mask", 2}}));
}

TEST(FeedNames, UnrelatedNamesFallBackToPosition) {
  NamedTensors feed;
  feed.emplace_back("X0", scalar(1));
  feed.emplace_back("Y0", scalar(2));
  match_feed_names(inputs({"identity_out_0", "identity_out_2"}), feed);
  EXPECT_EQ(contents(feed), (Contents{{"identity_out_0", 1}, {"identity_out_2", 2}}));
}

TEST(FeedNames, EntriesNoInputTakesAreDroppedAndUnmatchedInputsStayMissing) {
  NamedTensors extra;
  extra.emplace_back("x", scalar(1));
  extra.emplace_back("unused", scalar(2));
  match_feed_names(inputs({"x"}), extra);
  EXPECT_EQ(contents(extra), (Contents{{"x", 1}}));

  NamedTensors short_feed;
  short_feed.emplace_back("a", scalar(1));
  TensorMetadata two = inputs({"first", "second"});
  match_feed_names(two, short_feed);
  EXPECT_EQ(contents(short_feed), (Contents{{"first", 1}}));  // "second": no name, no position left
  EXPECT_THROW(validate_feed(two, short_feed, "runner"), InvalidInputError);
}

}  // namespace
}  // namespace parity::runtime
