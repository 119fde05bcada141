// RunResults JSON (Polygraphy's layout), the layerwise spill file and summary, and top-K
// postprocessing.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include <unistd.h>

#include <gtest/gtest.h>

#include "parity/compare/layerwise.h"
#include "parity/compare/postprocess.h"
#include "parity/compare/run_results.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"

namespace parity::compare {
namespace {

namespace fs = std::filesystem;

Tensor floats(Shape shape, std::vector<float> values) {
  return Tensor::from_bytes(DType::kFloat32, std::move(shape), values.data(), values.size() * sizeof(float));
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("parity-unit-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(std::random_device{}()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  std::size_t entries() const { return static_cast<std::size_t>(std::distance(fs::directory_iterator(path_), {})); }

 private:
  fs::path path_;
};

RunResults sample_results() {
  RunResults results(2);
  results[0].runner_name = "ref-runner-N0-11/21/26-18:06:00";
  results[1].runner_name = "onnxrt-runner-N0-11/21/26-18:06:00";
  for (int r = 0; r < 2; ++r) {
    for (int it = 0; it < 2; ++it) {
      IterationResult iteration;
      iteration.runner_name = results[r].runner_name;
      iteration.runtime = r == 0 ? std::optional<double>(0.00125 * (it + 1)) : std::nullopt;
      iteration.outputs.emplace_back("y", floats({1, 1, 2, 2}, {0.41702199f, 0.72032452f, 0.00011437f, float(r + it)}));
      int64_t ints[3] = {1, -2, 3};
      iteration.outputs.emplace_back("indices", Tensor::from_bytes(DType::kInt64, {3}, ints, sizeof ints));
      results[r].iterations.push_back(std::move(iteration));
    }
  }
  return results;
}

TEST(RunResultsJson, RoundTripKeepsOrderNamesRuntimesAndValues) {
  TempDir dir;
  RunResults results = sample_results();
  save_run_results(dir / "out.json", results);
  RunResults loaded = load_run_results(dir / "out.json");
  ASSERT_EQ(loaded.size(), 2u);
  for (std::size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(loaded[r].runner_name, results[r].runner_name);
    ASSERT_EQ(loaded[r].iterations.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
      const auto& a = results[r].iterations[i];
      const auto& b = loaded[r].iterations[i];
      EXPECT_EQ(b.runner_name, a.runner_name);
      EXPECT_EQ(b.runtime, a.runtime);
      ASSERT_EQ(b.names(), (std::vector<std::string>{"y", "indices"}));
      for (std::size_t o = 0; o < 2; ++o) EXPECT_TRUE(identical(b.outputs[o].second, a.outputs[o].second));
    }
  }
  // Python's json.dumps(indent=4) layout: 4-space indents, class marker last.
  std::string text = read_file(dir / "out.json");
  EXPECT_TRUE(text.starts_with("{\n    \"lst\": [\n        [\n            \"ref-runner-N0-11/21/26-18:06:00\",\n"));
  EXPECT_NE(text.find("\"runtime\": 0.00125,\n"), std::string::npos);
  EXPECT_NE(text.find("\"runtime\": null,\n"), std::string::npos);
  EXPECT_TRUE(text.ends_with("    ],\n    \"polygraphy_class\": \"RunResults\"\n}"));
}

TEST(RunResultsJson, ReadsLegacyMarkersAndAliases) {
  TempDir dir;
  std::string npy_b64 = encode_polygraphy_array(floats({2}, {1.5f, -2.0f}))["array"].get<std::string>();
  std::string text = R"({"__polygraphy_encoded_RunResults": "polygraphy_serialized_json_type", "lst": [["r", [
      {"__polygraphy_encoded_IterationResult": "polygraphy_serialized_json_type", "runtime": 1, "runner_name": "r",
       "outputs": {"z": {"polygraphy_class": "LazyNumpyArray",
                         "values": {"array": ")" + npy_b64 + R"(", "polygraphy_class": "ndarray"}}}}]]]})";
  write_file_atomic(dir / "legacy.json", text);
  RunResults loaded = load_run_results(dir / "legacy.json");
  ASSERT_EQ(loaded.size(), 1u);
  ASSERT_EQ(loaded[0].iterations.size(), 1u);
  EXPECT_EQ(loaded[0].iterations[0].runtime, 1.0);
  EXPECT_TRUE(identical(*loaded[0].iterations[0].find("z"), floats({2}, {1.5f, -2.0f})));
}

TEST(RunResultsJson, BadFilesNameTheProblem) {
  TempDir dir;
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    write_file_atomic(dir / "bad.json", text);
    try {
      load_run_results(dir / "bad.json");
      FAIL() << "no error for " << text;
    } catch (const InvalidInputError& error) {
      EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("bad.json"), std::string::npos) << error.what();
    }
  };
  expect_error("{\"lst\": [", "not valid JSON");
  expect_error("[]", "RunResults");
  expect_error(R"({"lst": {}, "polygraphy_class": "RunResults"})", "\"lst\"");
  expect_error(
      R"({"lst": [["r", [{"outputs": {}, "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"})",
      "runner_name");
  expect_error(R"({"lst": [["r", [{"outputs": {"y": {"values": 3, "polygraphy_class": "LazyArray"}}, "runtime": null,
                 "runner_name": "r", "polygraphy_class": "IterationResult"}]]], "polygraphy_class": "RunResults"})",
               "output 'y'");
}

// Arrays whose base64 text is long are decoded from the mapped file (the parser sees placeholders):
// values, escaped slashes written by other JSON writers, and damage inside a long string.
TEST(RunResultsJson, LongArrayStringsDecodeFromTheFile) {
  TempDir dir;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<float> values(20000);
  for (auto& v : values) v = normal(rng);
  RunResults results = sample_results();
  results[1].iterations[0].outputs.emplace_back("big", floats({4, 5000}, values));
  results[0].iterations[1].outputs.emplace_back("big", floats({20000}, values));
  save_run_results(dir / "long.json", results);
  std::string text = read_file(dir / "long.json");
  RunResults loaded = load_run_results(dir / "long.json");
  ASSERT_EQ(loaded.size(), 2u);
  const Tensor* big = loaded[1].iterations[0].find("big");
  ASSERT_NE(big, nullptr);
  EXPECT_TRUE(identical(*big, floats({4, 5000}, values)));
  EXPECT_TRUE(identical(*loaded[0].iterations[1].find("big"), floats({20000}, values)));
  EXPECT_TRUE(identical(*loaded[0].iterations[0].find("y"), *results[0].iterations[0].find("y")));

  // The same file with every '/' of the base64 written as "\/" (valid JSON, e.g. PHP's writer).
  std::string escaped;
  for (char c : text) escaped += c == '/' ? std::string("\\/") : std::string(1, c);
  ASSERT_NE(escaped, text);
  write_file_atomic(dir / "escaped.json", escaped);
  RunResults unescaped = load_run_results(dir / "escaped.json");
  EXPECT_TRUE(identical(*unescaped[1].iterations[0].find("big"), floats({4, 5000}, values)));

  // Cut inside a long string: not valid JSON. A bad character inside one: the output is named.
  auto expect_error = [&](const std::string& name, const std::string& content, const std::string& needle) {
    write_file_atomic(dir / name, content);
    try {
      load_run_results(dir / name);
      ADD_FAILURE() << "no error for " << name;
    } catch (const InvalidInputError& error) {
      EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find(name), std::string::npos) << error.what();
    }
  };
  std::size_t long_string = text.find("\"array\": \"", text.find("\"big\"")) + 12;
  expect_error("cut.json", text.substr(0, long_string + 5000), "not valid JSON");
  std::string damaged = text;
  damaged[long_string + 3000] = '*';
  expect_error("damaged.json", damaged, "output 'big'");
}

TEST(RunResultsJson, FailedSaveLeavesNothingBehind) {
  TempDir dir;
  RunResults results = sample_results();
  results[0].iterations[0].outputs.emplace_back("y", floats({1}, {0}));  // duplicate name
  EXPECT_THROW(save_run_results(dir / "out.json", results), InvalidInputError);
  EXPECT_EQ(dir.entries(), 0u);
}

TEST(TensorSpill, RecordsReadBackExactlyInOrder) {
  TensorSpill spill;
  Tensor a = floats({2, 3}, {1, 2, 3, 4, 5, 6});
  int8_t raw[5] = {1, -1, 2, -2, 3};
  Tensor b = Tensor::from_bytes(DType::kInt8, {5}, raw, sizeof raw);
  spill.append(0, "a", a, "node_a", "Conv");
  spill.append(0, "b", b, "node_b", "Relu");
  spill.append(1, "a", b, "node_a", "Conv");
  ASSERT_EQ(spill.records().size(), 3u);
  const auto* ra = spill.find(0, "a");
  const auto* rb = spill.find(0, "b");
  const auto* ra1 = spill.find(1, "a");
  ASSERT_TRUE(ra && rb && ra1);
  EXPECT_EQ(spill.find(2, "a"), nullptr);
  EXPECT_EQ(ra->order, 0u);
  EXPECT_EQ(rb->order, 1u);
  EXPECT_EQ(rb->node, "node_b");
  EXPECT_EQ(rb->op, "Relu");
  EXPECT_EQ(rb->offset % 64, 0u);
  EXPECT_TRUE(identical(spill.read(*ra), a));
  EXPECT_TRUE(identical(spill.read(*rb), b));
  EXPECT_TRUE(identical(spill.read(*ra1), b));
  EXPECT_GE(spill.bytes_written(), a.byte_size() + b.byte_size());
}

TEST(Layerwise, FirstDivergenceIsTheEarliestFailingTensorInOrder) {
  LayerwiseResult result;
  result.runner0 = "r0";
  result.runner1 = "r1";
  SimpleOutputParams params;
  params.atol = 1e-3;
  params.rtol = 1e-3;
  Tensor base = floats({4}, {1, 2, 3, 4});
  // Compared out of topological order (as a piecewise backend may stream them).
  compare_layer(result, 2, 0, "c", "node_c", "Mul", base, floats({4}, {1, 2, 3, 9}), params);
  compare_layer(result, 0, 0, "a", "node_a", "Add", base, base, params);
  compare_layer(result, 1, 0, "b", "node_b", "Conv", base, floats({4}, {1, 2.1f, 3, 4}), params);
  ASSERT_FALSE(result.passed());
  const LayerwiseEntry* first = result.first_divergence();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->tensor, "b");
  EXPECT_EQ(first->node, "node_b");
  auto worst = result.worst(2);
  ASSERT_EQ(worst.size(), 2u);
  EXPECT_EQ(worst[0]->tensor, "c");  // error 5 beats error 0.1
  EXPECT_EQ(worst[1]->tensor, "b");
  EXPECT_NEAR(worst[1]->excess(), (0.1 / 2.1) / 1e-3, 0.5);  // rel error is the smaller excess
  auto json = to_json(result, 2);
  EXPECT_EQ(json["first_divergence"]["tensor"], "b");
  EXPECT_EQ(json["failing"], 2);
  PairResult pair = result.as_pair();
  ASSERT_EQ(pair.iterations.size(), 1u);
  EXPECT_EQ(pair.iterations[0].outputs.size(), 3u);
  EXPECT_FALSE(pair.passed());
}

TEST(Postprocess, TopKMatchesNumpyStableArgsortOfNegatedValues) {
  // np.argsort(-x, axis=-1, kind="stable")[..., :3] on [[3, 1, 3, 2], [nan, 5, 5, -1]]
  Tensor x = floats({2, 4}, {3, 1, 3, 2, std::numeric_limits<float>::quiet_NaN(), 5, 5, -1});
  Tensor top = top_k_indices(x, 3, -1);
  ASSERT_EQ(top.shape(), (Shape{2, 3}));
  std::vector<int64_t> got(top.span<int64_t>().begin(), top.span<int64_t>().end());
  EXPECT_EQ(got, (std::vector<int64_t>{0, 2, 3, 1, 2, 3}));
  // Axis 0, k clamped to the axis length.
  Tensor top0 = top_k_indices(x, 10, 0);
  ASSERT_EQ(top0.shape(), (Shape{2, 4}));
  std::vector<int64_t> got0(top0.span<int64_t>().begin(), top0.span<int64_t>().end());
  EXPECT_EQ(got0, (std::vector<int64_t>{0, 1, 1, 0, 1, 0, 0, 1}));
  // uint8: numpy negates modulo 256 (-200 -> 56, -100 -> 156), so 0 sorts first, then 200.
  uint8_t u[3] = {0, 200, 100};
  Tensor top_u = top_k_indices(Tensor::from_bytes(DType::kUInt8, {3}, u, 3), 3, 0);
  std::vector<int64_t> got_u(top_u.span<int64_t>().begin(), top_u.span<int64_t>().end());
  EXPECT_EQ(got_u, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_THROW(top_k_indices(x, 3, 2), InvalidInputError);
}

TEST(Postprocess, ParsesPolygraphyRules) {
  auto [name, rule] = parse_postprocess("logits:top-5,axis=1");
  EXPECT_EQ(name, "logits");
  EXPECT_EQ(rule.k, 5);
  EXPECT_EQ(rule.axis, 1);
  auto [all, plain] = parse_postprocess("top-3");
  EXPECT_EQ(all, "");
  EXPECT_EQ(plain.k, 3);
  EXPECT_EQ(plain.axis, -1);
  EXPECT_THROW(parse_postprocess("top-x"), InvalidInputError);
  EXPECT_THROW(parse_postprocess("top-0"), InvalidInputError);
  EXPECT_THROW(parse_postprocess("bottom-3"), InvalidInputError);
  PostprocessRules rules{{"", {2, -1}}, {"special", {1, -1}}};
  EXPECT_EQ(postprocess_rule(rules, "special")->k, 1);
  EXPECT_EQ(postprocess_rule(rules, "other")->k, 2);
}

}  // namespace
}  // namespace parity::compare
