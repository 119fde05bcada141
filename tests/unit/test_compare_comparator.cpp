// Output pairing, Comparator.compare_accuracy / validate, the other comparison functions
// (indices, distance, quality) and the JSON report.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "parity/compare/comparator.h"
#include "parity/core/error.h"
#include "test_compare_helpers.h"

namespace parity::compare {
namespace {

using namespace testing;
using namespace statistics;

RunResults two_runners(std::vector<NamedTensors> iterations0, std::vector<NamedTensors> iterations1) {
  RunResults results(2);
  results[0].runner_name = "r0";
  results[1].runner_name = "r1";
  for (auto& outputs : iterations0) results[0].iterations.push_back(iteration("r0", std::move(outputs)));
  for (auto& outputs : iterations1) results[1].iterations.push_back(iteration("r1", std::move(outputs)));
  return results;
}

// ---- Pairing ----
TEST(ComparePairing, FindStrInIterable) {
  std::vector<std::string> names = {"Output", "logits", "probs"};
  EXPECT_EQ(find_str_in_iterable("logits", names), "logits");           // exact
  EXPECT_EQ(find_str_in_iterable("OUT", names), "Output");              // "out" in "output"
  EXPECT_EQ(find_str_in_iterable("final_probs_0", names), "probs");     // "probs" in the name
  EXPECT_EQ(find_str_in_iterable("zzz", names, 2), "probs");            // by index
  EXPECT_EQ(find_str_in_iterable("zzz", names, 3), std::nullopt);       // index out of range
  EXPECT_EQ(find_str_in_iterable("zzz", names), std::nullopt);
}

TEST(ComparePairing, NonExactMatchIsSkippedWhenItHasItsOwnExactMatch) {
  LogCapture log(Severity::kVerbose);
  IterationResult base = iteration("r0", {{"a", f32({1})}, {"ab", f32({1})}});
  IterationResult other = iteration("r1", {{"ab", f32({1})}});
  // "a" finds "ab" by substring, but "ab" exists exactly in the first result: skipped.
  EXPECT_TRUE(default_find_output("a", 0, other, base).empty());
  EXPECT_NE(log.text().find("Will not compare ab with a, since the former already has an exact match: ab"),
            std::string::npos);
  EXPECT_EQ(default_find_output("ab", 1, other, base), std::vector<std::string>{"ab"});
}

TEST(ComparePairing, CaseInsensitiveMatchWarns) {
  LogCapture log;
  RunResults results = two_runners({{{"y", f32({1})}}}, {{{"Y", f32({1})}}});
  AccuracyResult r = compare_accuracy(results);
  EXPECT_TRUE(r.passed());
  EXPECT_NE(
      log.text().find("[W]     Output names did not match exactly. Assuming r1 output: Y corresponds to output: y"),
      std::string::npos);
  EXPECT_NE(
      log.text().find("[I]     Comparing Output: 'y' (dtype=float32, shape=(1,)) with 'Y' (dtype=float32, shape=(1,))"),
      std::string::npos);
}

TEST(ComparePairing, AllOutputsSkippedIsAnError) {
  LogCapture log;
  // The second result has no outputs at all: nothing pairs.
  RunResults results = two_runners({{{"y", f32({1})}}}, {{}});
  EXPECT_THROW(compare_accuracy(results), InvalidInputError);
  EXPECT_NE(log.text().find("[!]     All outputs were skipped, no common outputs found! Note:\n"
                            "        r0 outputs: ['y']\n        r1 outputs: []"),
            std::string::npos);
}

TEST(ComparePairing, UnsupportedOutputsFailWithoutStoppingTheRun) {
  LogCapture log;
  Tensor strings = Tensor::zeros(DType::kString, Shape{2});
  RunResults results = two_runners({{{"s", strings}, {"y", f32({1})}}}, {{{"s", strings}, {"y", f32({1})}}});
  AccuracyResult r = compare_accuracy(results);
  ASSERT_EQ(r.pairs[0].iterations[0].outputs.size(), 2u);
  EXPECT_FALSE(r.pairs[0].iterations[0].outputs[0].passed);
  EXPECT_TRUE(r.pairs[0].iterations[0].outputs[1].passed);
  EXPECT_NE(log.text().find(
                "FAILED | Output: 's' | Cannot compare these outputs: cannot compute statistics of string values"),
            std::string::npos);
}

// ---- compare_accuracy ----
TEST(CompareAccuracy, IterationsAndSummary) {
  LogCapture log;
  RunResults results = two_runners({{{"y", f32({1})}}, {{"y", f32({2})}}, {{"y", f32({3})}}},
                                   {{{"y", f32({1})}}, {{"y", f32({9})}}, {{"y", f32({3})}}});
  AccuracyResult r = compare_accuracy(results);
  ASSERT_EQ(r.pairs.size(), 1u);
  EXPECT_EQ(r.pairs[0].passed_iterations(), 2);
  EXPECT_EQ(r.pairs[0].total_iterations(), 3);
  EXPECT_FALSE(r.passed());
  std::string text = log.text();
  EXPECT_EQ(text.rfind("[I] Accuracy Comparison | r0 vs. r1\n[I]     Iteration: 0\n", 0), 0u);
  EXPECT_NE(text.find("[I]     Iteration: 2\n[I]         Comparing Output: 'y'"), std::string::npos);
  // 2.0/3.0*100.0 = 66.66666666666666 in IEEE doubles, printed as Python prints floats.
  EXPECT_NE(text.find("[E] Accuracy Summary | r0 vs. r1 | Passed: 2/3 iterations | Pass Rate: 66.66666666666666%"),
            std::string::npos);
}

TEST(CompareAccuracy, FailFastStopsAtTheFirstMismatch) {
  LogCapture log;
  RunResults results = two_runners({{{"y", f32({1})}}, {{"y", f32({2})}}}, {{{"y", f32({5})}}, {{"y", f32({2})}}});
  CompareAccuracyOptions options;
  options.fail_fast = true;
  AccuracyResult r = compare_accuracy(results, simple(), options);
  EXPECT_EQ(r.pairs[0].iterations.size(), 1u);
  EXPECT_EQ(log.text().find("Accuracy Summary"), std::string::npos);
}

TEST(CompareAccuracy, ThreeRunnersDefaultToAdjacentPairs) {
  LogCapture log;
  RunResults results(3);
  for (int i = 0; i < 3; ++i) {
    results[static_cast<std::size_t>(i)].runner_name = "r" + std::to_string(i);
    results[static_cast<std::size_t>(i)].iterations.push_back(iteration("r" + std::to_string(i), {{"y", f32({1})}}));
  }
  AccuracyResult r = compare_accuracy(results);
  ASSERT_EQ(r.pairs.size(), 2u);
  EXPECT_EQ(r.pairs[1].runner0, "r1");
  EXPECT_EQ(r.pairs[1].runner1, "r2");
  EXPECT_NE(log.text().find("[I] Accuracy Summary | r1 vs. r2 | Passed: 1/1 iterations | Pass Rate: 100.0%"),
            std::string::npos);
}

// ---- validate ----
TEST(CompareValidate, NanAndInfMessages) {
  LogCapture log;
  RunResults results(1);
  results[0].runner_name = "r0";
  results[0].iterations.push_back(iteration("r0", {{"ok", f32({1, 2})}, {"bad", f32({NAN, INFINITY})}}));
  ValidateOptions options;
  options.check_inf = true;
  options.style = StatisticsStyle::kPolygraphy;
  ValidationResult v = validate(results, options);
  EXPECT_FALSE(v.passed);
  ASSERT_EQ(v.outputs.size(), 2u);
  EXPECT_TRUE(v.outputs[0].valid);
  EXPECT_FALSE(v.outputs[1].valid);
  std::string text = log.text();
  EXPECT_NE(text.find("[I] Output Validation | Runners: ['r0']"), std::string::npos);
  EXPECT_NE(
      text.find(
          "[I]     r0                                  | Validating output: bad (check_inf=True, check_nan=True)"),
      std::string::npos);
  EXPECT_NE(text.find("[E]         NaN Detected | One or more NaNs were encountered in this output\n"),
            std::string::npos);
  EXPECT_NE(text.find("[E]         Inf Detected | One or more non-finite values were encountered in this output\n"),
            std::string::npos);
  EXPECT_NE(text.find("[I]         PASSED | Output: ok is valid"), std::string::npos);
  EXPECT_NE(text.find("[E]         FAILED | Errors detected in output: bad"), std::string::npos);
  EXPECT_NE(text.find("[E]     FAILED | Output Validation"), std::string::npos);
  // The stats line has no label in validate.
  EXPECT_NE(text.find("[I]         mean=1.5, std-dev=0.5, var=0.25, median=1.5"), std::string::npos);
}

TEST(CompareValidate, ParityStyleCountsNonFiniteValues) {
  LogCapture log;
  RunResults results(1);
  results[0].runner_name = "r0";
  results[0].iterations.push_back(iteration("r0", {{"bad", f32({NAN, 1, NAN})}}));
  ValidationResult v = validate(results);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.outputs[0].summary.nan_count, 2);
  EXPECT_NE(log.text().find("NaN Detected | One or more NaNs were encountered in this output | 2 of 3 element(s)"),
            std::string::npos);
  EXPECT_NE(log.text().find("mean=1, std-dev=0, var=0, median=1, min=1 at (1,), max=1 at (1,)"), std::string::npos);
}

// ---- indices ----
TEST(CompareIndices, IndexTolerance) {
  LogCapture log;
  auto compare = [](Tensor a, Tensor b, int64_t tolerance) {
    IndicesOptions o;
    o.index_tolerance = tolerance;
    return indices(o)(iteration("r0", {{"k", std::move(a)}}), iteration("r1", {{"k", std::move(b)}}));
  };
  Tensor a = ints<int64_t>(DType::kInt64, {0, 1, 2});
  // [0 1 2] vs [1 0 2]: 0 and 1 swapped, one position apart.
  EXPECT_FALSE(compare(a, ints<int64_t>(DType::kInt64, {1, 0, 2}), 0).passed());
  EXPECT_NE(log.text().find("FAILED | Difference exceeds index tolerance (0)"), std::string::npos);
  EXPECT_TRUE(compare(a, ints<int64_t>(DType::kInt64, {1, 0, 2}), 1).passed());
  EXPECT_NE(log.text().find("PASSED | Difference is within index tolerance (1)"), std::string::npos);
  // [0 1 2] vs [1 2 0]: 0 moved two places; tolerance 1 ignores only the last element.
  EXPECT_FALSE(compare(a, ints<int64_t>(DType::kInt64, {1, 2, 0}), 1).passed());
  auto missing = compare(ints<int64_t>(DType::kInt64, {5}), ints<int64_t>(DType::kInt64, {6}), 0);
  EXPECT_FALSE(missing.passed());
  EXPECT_EQ(missing.outputs[0].indices->values_not_found, 1);
  EXPECT_NE(log.text().find("FAILED | Value: 5 not found in output"), std::string::npos);
}

TEST(CompareIndices, BatchesAlongTheLastAxis) {
  LogCapture log;
  Tensor a = make_tensor<int32_t>(DType::kInt32, {2, 2}, {0, 1, 1, 0});
  Tensor b = make_tensor<int32_t>(DType::kInt32, {2, 2}, {0, 1, 0, 1});
  auto r = indices()(iteration("r0", {{"k", a}}), iteration("r1", {{"k", b}}));
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.outputs[0].indices->beyond_tolerance, 2);  // second batch: both values moved by 1
}

// ---- distance ----
TEST(CompareDistance, L2AndCosine) {
  LogCapture log;
  auto compare = [](Tensor a, Tensor b) {
    return distance()(iteration("r0", {{"v", std::move(a)}}), iteration("r1", {{"v", std::move(b)}}));
  };
  auto same = compare(f32({1, 2}), f32({1, 2}));
  EXPECT_TRUE(same.passed());
  EXPECT_EQ(same.outputs[0].distance->l2_norm, 0);
  EXPECT_NEAR(same.outputs[0].distance->cosine_similarity, 1, 1e-15);
  // [3, 4] vs [0, 0]: L2 = 5; one zero vector -> cosine 0.
  auto zero = compare(f32({3, 4}), f32({0, 0}));
  EXPECT_FALSE(zero.passed());
  EXPECT_EQ(zero.outputs[0].distance->l2_norm, 5);
  EXPECT_EQ(zero.outputs[0].distance->cosine_similarity, 0);
  EXPECT_NE(log.text().find("L2 Norm: 5 (tolerance: 1e-05) | FAILED"), std::string::npos);
  EXPECT_NE(log.text().find("FAILED | Output: 'v' | Cosine Similarity (0) below threshold (0.997)"), std::string::npos);
  // Both zero: cosine 1. Orthogonal: cosine 0, L2 sqrt(2).
  EXPECT_EQ(compare(f32({0, 0}), f32({0, 0})).outputs[0].distance->cosine_similarity, 1);
  auto ortho = compare(f32({1, 0}), f32({0, 1}));
  EXPECT_NEAR(ortho.outputs[0].distance->l2_norm, std::sqrt(2.0), 1e-12);
  EXPECT_EQ(ortho.outputs[0].distance->cosine_similarity, 0);
}

TEST(CompareDistance, NanIsReportedInParityButFailsEitherWay) {
  LogCapture log;
  auto r = distance()(iteration("r0", {{"v", f32({NAN, 1})}}), iteration("r1", {{"v", f32({1, 1})}}));
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(std::isnan(r.outputs[0].distance->cosine_similarity));
  DistanceOptions polygraphy;
  polygraphy.style = StatisticsStyle::kPolygraphy;
  auto p = distance(polygraphy)(iteration("r0", {{"v", f32({NAN, 1})}}), iteration("r1", {{"v", f32({1, 1})}}));
  EXPECT_FALSE(p.passed());
  EXPECT_EQ(p.outputs[0].distance->cosine_similarity, 1.0);  // Python's min(1.0, nan) is 1.0
}

// ---- quality ----
TEST(CompareQuality, PsnrAndSnr) {
  LogCapture log;
  // a = [1,2,3,4], b = [1,2,3,5]: MSE = 1/4; PSNR = 20 log10(max a = 4) - 10 log10(0.25) = 18.0618;
  // SNR = 10 log10(mean(a^2) = 7.5 / 0.25) = 10 log10(30) = 14.7712.
  auto r = quality()(iteration("r0", {{"img", f32({1, 2, 3, 4})}}), iteration("r1", {{"img", f32({1, 2, 3, 5})}}));
  EXPECT_FALSE(r.passed());
  const QualityMetrics& m = *r.outputs[0].quality;
  EXPECT_NEAR(*m.psnr, 20 * std::log10(4.0) - 10 * std::log10(0.25), 1e-9);
  EXPECT_NEAR(*m.snr, 10 * std::log10(30.0), 1e-9);
  EXPECT_NE(log.text().find("PSNR: 18.062 dB (min required: 30 dB) | FAILED"), std::string::npos);
  EXPECT_NE(log.text().find("SNR: 14.771 dB (min required: 20 dB) | FAILED"), std::string::npos);
  QualityOptions loose;
  loose.psnr_tolerance = PerOutput<double>(18.0);
  loose.snr_tolerance = std::nullopt;  // not checked
  auto ok =
      quality(loose)(iteration("r0", {{"img", f32({1, 2, 3, 4})}}), iteration("r1", {{"img", f32({1, 2, 3, 5})}}));
  EXPECT_TRUE(ok.passed());
  EXPECT_FALSE(ok.outputs[0].quality->snr.has_value());
  // Identical outputs: infinite PSNR and SNR.
  auto same = quality()(iteration("r0", {{"img", f32({1, 2})}}), iteration("r1", {{"img", f32({1, 2})}}));
  EXPECT_TRUE(same.passed());
  EXPECT_TRUE(std::isinf(*same.outputs[0].quality->psnr));
}

// ---- report ----
TEST(CompareReport, JsonHasEveryLevelAndEncodesNonFiniteNumbers) {
  LogCapture log;
  RunResults results = two_runners({{{"y", f32({1, NAN})}}}, {{{"y", f32({1, 0})}}});
  AccuracyResult accuracy = compare_accuracy(results);
  nlohmann::ordered_json report = make_report(&accuracy, nullptr);
  EXPECT_EQ(report["parity_report_version"], 1);
  EXPECT_EQ(report["passed"], false);
  const auto& pair = report["accuracy"]["pairs"][0];
  EXPECT_EQ(pair["runner0"], "r0");
  EXPECT_EQ(pair["total_iterations"], 1);
  const auto& out = pair["iterations"][0]["outputs"][0];
  EXPECT_EQ(out["output0"], "y");
  EXPECT_EQ(out["passed"], false);
  EXPECT_EQ(out["simple"]["max_absdiff"], "nan");  // Polygraphy's number, as a string
  EXPECT_EQ(out["simple"]["zero_reference"], 1);
  EXPECT_EQ(out["simple"]["statistics"]["output0"]["nan"], 1);
  EXPECT_EQ(out["simple"]["statistics"]["absdiff"]["finite"]["max"], 0);
  auto path = std::filesystem::temp_directory_path() / "parity_compare_report_test.json";
  save_report(path, report);
  std::ifstream in(path);
  nlohmann::ordered_json back = nlohmann::ordered_json::parse(in);
  EXPECT_EQ(back, report);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace parity::compare
