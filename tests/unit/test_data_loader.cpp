// Tests for the default data loader. The peer test runs Polygraphy's DataLoader (the interpreter
// named by PARITY_PYTHON) and compares its arrays with Parity's bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "test_data_loader_helpers.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/core/tensor.h"
#include "parity/core/tensor_metadata.h"
#include "parity/runtime/data_loader.h"

namespace parity::runtime {
namespace {

using namespace parity::runtime::testing;

// ---------------------------------------------------------------------------------------------
// Helpers

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  std::vector<T> v(static_cast<std::size_t>(t.size()));
  if (!v.empty()) std::memcpy(v.data(), t.raw(), v.size() * sizeof(T));
  return v;
}

NamedTensors::const_iterator find_named(const NamedTensors& set, const std::string& name) {
  return std::find_if(set.begin(), set.end(), [&](const auto& e) { return e.first == name; });
}

// Captures Logger output in a temporary file while alive.
class LogCapture {
 public:
  explicit LogCapture(Severity severity = Severity::kInfo) {
    file_ = std::tmpfile();
    previous_ = Logger::global().severity();
    Logger::global().set_stream(file_);
    Logger::global().set_severity(severity);
  }
  ~LogCapture() {
    Logger::global().set_stream(stdout);
    Logger::global().set_severity(previous_);
    std::fclose(file_);
  }
  std::string text() {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, file_)) > 0) out.append(buffer, n);
    std::fseek(file_, 0, SEEK_END);
    return out;
  }

 private:
  std::FILE* file_;
  Severity previous_;
};

int count_of(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (std::size_t pos = haystack.find(needle); pos != std::string::npos;
       pos = haystack.find(needle, pos + 1))
    ++n;
  return n;
}

// ---------------------------------------------------------------------------------------------
// DataLoader, self-contained checks

TEST(DataLoaderTest, DocumentedExample) {
  // Polygraphy's `inspect data` example: seed 1, float32 [1, 1, 2, 2].
  TensorMetadata metadata;
  metadata.add("x", DType::kFloat32, std::vector<Dim>{Dim::fixed(1), Dim::fixed(1), Dim::fixed(2), Dim::fixed(2)});
  DataLoader loader;
  EXPECT_EQ(loader.iterations(), 1);
  const NamedTensors feed = loader.generate(metadata, 0);
  ASSERT_EQ(feed.size(), 1u);
  EXPECT_EQ(feed[0].first, "x");
  const Tensor& x = feed[0].second;
  ASSERT_EQ(x.dtype(), DType::kFloat32);
  ASSERT_EQ(x.shape(), (Shape{1, 1, 2, 2}));
  // The documented values are the float64 samples printed with 6 significant digits; the
  // float32 values agree to float32 precision (0.720324 is 0.72032449 before the cast).
  const std::vector<double> expected = {0.417022, 0.720324, 0.000114375, 0.302333};
  const std::vector<std::string> printed = {"0.417022", "0.720324", "0.000114375", "0.302333"};
  NumpyRandomState state(1);
  for (int i = 0; i < 4; ++i) {
    const double sample = state.random_sample();
    EXPECT_EQ(fmt::format("{:g}", sample), printed[i]) << i;
    EXPECT_NEAR(x.data<float>()[i], expected[i], 5e-6 * expected[i]) << i;  // 6 digits
    // Exactly the float64 sample rounded to float32.
    EXPECT_EQ(x.data<float>()[i], static_cast<float>(sample)) << i;
  }
}

TEST(DataLoaderTest, IterationsUseSeedPlusIndex) {
  TensorMetadata metadata;
  metadata.add("x", DType::kFloat64, std::vector<Dim>{Dim::fixed(3)});
  DataLoaderOptions options;
  options.seed = 10;
  options.iterations = 3;
  DataLoader loader(options);
  const auto feeds = loader.generate_all(metadata);
  ASSERT_EQ(feeds.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    NumpyRandomState state(10 + i);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(feeds[i][0].second.data<double>()[k], state.random_sample());
  }
  EXPECT_THROW(loader.generate(metadata, 3), InvalidInputError);
  EXPECT_THROW(loader.generate(metadata, -1), InvalidInputError);
}

TEST(DataLoaderTest, DefaultRangeGivesZeroOrOneForIntegersAndBool) {
  TensorMetadata metadata;
  metadata.add("i", DType::kInt32, std::vector<Dim>{Dim::fixed(200)});
  metadata.add("b", DType::kBool, std::vector<Dim>{Dim::fixed(200)});
  const NamedTensors feed = DataLoader().generate(metadata, 0);
  std::set<int32_t> ints(feed[0].second.data<int32_t>(), feed[0].second.data<int32_t>() + 200);
  EXPECT_EQ(ints, (std::set<int32_t>{0, 1}));
  int trues = 0;
  for (bool b : feed[1].second.span<bool>()) trues += b;
  EXPECT_GT(trues, 50);
  EXPECT_LT(trues, 150);
}

TEST(DataLoaderTest, DynamicDimsBoundsAndWarningOnce) {
  TensorMetadata metadata;
  Dim bounded = Dim::named("S");
  bounded.min = 4;
  bounded.max = 9;
  Dim max_only = Dim::unknown();
  max_only.max = 6;
  metadata.add("x", DType::kFloat32, std::vector<Dim>{Dim::named("N"), Dim::fixed(3), Dim::unknown()});
  metadata.add("y", DType::kInt64, std::vector<Dim>{bounded, max_only});
  DataLoaderOptions options;
  options.iterations = 3;
  DataLoader loader(options);
  LogCapture capture;
  for (int i = 0; i < 3; ++i) {
    const NamedTensors feed = loader.generate(metadata, i);
    EXPECT_EQ(feed[0].second.shape(), (Shape{1, 3, 1}));
    EXPECT_EQ(feed[1].second.shape(), (Shape{4, 6}));
  }
  const std::string log = capture.text();
  EXPECT_EQ(count_of(log, "Will generate data of shape: [1, 3, 1]"), 1) << log;
  EXPECT_EQ(count_of(log, "Input tensor: x [shape=['N', 3, None]]"), 1) << log;
  EXPECT_EQ(count_of(log, "Will generate data of shape: [4, 6]"), 1) << log;
}

TEST(DataLoaderTest, ShapeOverridesWildcardsAndShapeTensors) {
  TensorMetadata metadata;
  metadata.add("image", DType::kFloat32, std::vector<Dim>{Dim::named("B"), Dim::fixed(3), Dim::unknown()});
  metadata.add("w1", DType::kInt8, std::vector<Dim>{Dim::unknown(), Dim::fixed(2)});
  metadata.add("w2", DType::kUInt8, std::vector<Dim>{Dim::named("K"), Dim::fixed(2)});
  metadata.add("shape", DType::kInt32, std::vector<Dim>{Dim::fixed(3)});
  metadata.add("one", DType::kInt64, std::vector<Dim>{Dim::fixed(1)});
  DataLoaderOptions options;
  options.input_shapes = {{"image", {2, 3, 7}},
                          {"w*", {5, 2}},
                          {"w2", {6, 2}},  // later key wins for w2
                          {"shape", {8, 9, 10}},
                          {"one", {1}},
                          {"imgae", {1}},
                          {"zz*", {1}}};
  DataLoader loader(options);
  LogCapture capture;
  const NamedTensors feed = loader.generate(metadata, 0);
  EXPECT_EQ(feed[0].second.shape(), (Shape{2, 3, 7}));
  EXPECT_EQ(feed[1].second.shape(), (Shape{5, 2}));
  EXPECT_EQ(feed[2].second.shape(), (Shape{6, 2}));
  EXPECT_EQ(feed[3].second.shape(), (Shape{3}));
  EXPECT_EQ(values_of<int32_t>(feed[3].second), (std::vector<int32_t>{8, 9, 10}));
  EXPECT_EQ(values_of<int64_t>(feed[4].second), (std::vector<int64_t>{1}));
  const std::string log = capture.text();
  EXPECT_NE(log.find("Input tensor: imgae | Metadata was provided, but the input does not exist"), std::string::npos)
      << log;
  EXPECT_NE(log.find("Input tensor wildcard: zz* | Metadata was provided"), std::string::npos) << log;
  EXPECT_NE(log.find("Assuming shape is a shape tensor. Setting input values to: [8, 9, 10]"), std::string::npos)
      << log;
  EXPECT_EQ(log.find("Will generate data of shape"), std::string::npos) << log;
  // Shape tensors draw nothing: the stream continues as if they were absent.
  TensorMetadata without;
  without.add("image", DType::kFloat32, std::vector<Dim>{Dim::fixed(2), Dim::fixed(3), Dim::fixed(7)});
  without.add("w1", DType::kInt8, std::vector<Dim>{Dim::fixed(5), Dim::fixed(2)});
  without.add("w2", DType::kUInt8, std::vector<Dim>{Dim::fixed(6), Dim::fixed(2)});
  const NamedTensors plain = DataLoader().generate(without, 0);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(identical(plain[i].second, feed[i].second)) << i;
}

TEST(DataLoaderTest, ValueRangesAndKeys) {
  TensorMetadata metadata;
  metadata.add("a", DType::kFloat64, std::vector<Dim>{Dim::fixed(100)});
  metadata.add("b", DType::kInt16, std::vector<Dim>{Dim::fixed(100)});
  metadata.add("c", DType::kFloat32, std::vector<Dim>{Dim::fixed(100)});
  DataLoaderOptions options;
  options.val_ranges = {{"", {-5.0, -4.0}}, {"b", {10.7, 12.9}}, {"bb", {0, 1}}};
  DataLoader loader(options);
  LogCapture capture;
  const NamedTensors feed = loader.generate(metadata, 0);
  for (double v : feed[0].second.span<double>()) {
    EXPECT_GE(v, -5.0);
    EXPECT_LT(v, -4.0);
  }
  std::set<int16_t> ints(feed[1].second.span<int16_t>().begin(), feed[1].second.span<int16_t>().end());
  EXPECT_EQ(ints, (std::set<int16_t>{10, 11, 12}));  // int() truncates 10.7 and 12.9
  for (float v : feed[2].second.span<float>()) EXPECT_LE(v, -4.0f);
  EXPECT_NE(capture.text().find("Extra items in val_range: {'bb'}"), std::string::npos) << capture.text();
}

TEST(DataLoaderTest, InfiniteBounds) {
  TensorMetadata metadata;
  metadata.add("pos", DType::kFloat32, std::vector<Dim>{Dim::fixed(8)});
  metadata.add("neg", DType::kFloat16, std::vector<Dim>{Dim::fixed(8)});
  DataLoaderOptions options;
  const double inf = std::numeric_limits<double>::infinity();
  options.val_ranges = {{"pos", {0.0, inf}}, {"neg", {-inf, 0.0}}};
  const NamedTensors feed = DataLoader(options).generate(metadata, 0);
  for (float v : feed[0].second.span<float>()) EXPECT_EQ(v, std::numeric_limits<float>::infinity());
  for (uint16_t v : feed[1].second.span<uint16_t>()) EXPECT_EQ(v, 0xfc00);
}

TEST(DataLoaderTest, BFloat16IsFloat32ThenRounded) {
  TensorMetadata metadata;
  metadata.add("x", DType::kBFloat16, std::vector<Dim>{Dim::fixed(64)});
  DataLoaderOptions options;
  options.val_ranges = {{"", {-3.0, 7.0}}};
  const NamedTensors feed = DataLoader(options).generate(metadata, 0);
  NumpyRandomState state(1);
  for (uint16_t bits : feed[0].second.span<uint16_t>()) {
    const double sample = state.random_sample() * 10.0 + -3.0;
    EXPECT_EQ(bits, float_to_bfloat16_bits(static_cast<float>(sample)));
  }
}

TEST(DataLoaderTest, BadOptionsNameTheInput) {
  auto message_of = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const InvalidInputError& e) {
      return e.what();
    } catch (const std::exception& e) {
      return std::string("wrong exception type: ") + e.what();
    }
    return "no exception";
  };
  TensorMetadata metadata;
  metadata.add("img", DType::kFloat32, std::vector<Dim>{Dim::fixed(1), Dim::fixed(3), Dim::unknown()});
  {
    DataLoaderOptions options;
    options.val_ranges = {{"img", {2.0, 1.0}}};
    EXPECT_NE(message_of([&] { DataLoader{options}; }).find("img"), std::string::npos);
    options.val_ranges = {{"", {2.0, 1.0}}};
    EXPECT_NE(message_of([&] { DataLoader{options}; }).find("Default value range"), std::string::npos);
  }
  {
    DataLoaderOptions options;
    options.input_shapes = {{"img", {1, 3}}};  // wrong rank
    const std::string m = message_of([&] { DataLoader(options).generate(metadata, 0); });
    EXPECT_NE(m.find("img"), std::string::npos) << m;
    EXPECT_NE(m.find("rank"), std::string::npos) << m;
    options.input_shapes = {{"img", {1, 4, 5}}};  // contradicts a static dim
    const std::string m2 = message_of([&] { DataLoader(options).generate(metadata, 0); });
    EXPECT_NE(m2.find("img"), std::string::npos) << m2;
    EXPECT_NE(m2.find("static dimension"), std::string::npos) << m2;
    // A wildcard that does not fit only warns and uses the default shape (as Polygraphy does).
    options.input_shapes = {{"im*", {1, 4, 5}}};
    LogCapture capture;
    EXPECT_EQ(DataLoader(options).generate(metadata, 0)[0].second.shape(), (Shape{1, 3, 1}));
    EXPECT_NE(capture.text().find("Cannot use provided custom shape: [1, 4, 5]"), std::string::npos);
  }
  {
    TensorMetadata strings;
    strings.add("text", DType::kString, std::vector<Dim>{Dim::fixed(2)});
    const std::string m = message_of([&] { DataLoader().generate(strings, 0); });
    EXPECT_NE(m.find("text"), std::string::npos) << m;
    EXPECT_NE(m.find("string"), std::string::npos) << m;
    TensorMetadata fp8;
    fp8.add("q", DType::kFloat8E4M3FN, std::vector<Dim>{Dim::fixed(2)});
    EXPECT_NE(message_of([&] { DataLoader().generate(fp8, 0); }).find("q"), std::string::npos);
  }
  {
    TensorMetadata ints;
    ints.add("u", DType::kUInt8, std::vector<Dim>{Dim::fixed(2)});
    DataLoaderOptions options;
    options.val_ranges = {{"u", {-1.0, 5.0}}};  // numpy: low is out of bounds for uint8
    EXPECT_NE(message_of([&] { DataLoader(options).generate(ints, 0); }).find("u |"), std::string::npos);
    options.val_ranges = {{"u", {0.0, 256.0}}};
    EXPECT_NE(message_of([&] { DataLoader(options).generate(ints, 0); }).find("out of bounds"), std::string::npos);
    options.val_ranges = {{"u", {0.0, std::numeric_limits<double>::infinity()}}};
    EXPECT_NE(message_of([&] { DataLoader(options).generate(ints, 0); }).find("u |"), std::string::npos);
    TensorMetadata flags;
    flags.add("flag", DType::kBool, std::vector<Dim>{Dim::fixed(2)});
    options.val_ranges = {{"flag", {-1.0, 0.0}}};  // bool(-1) > bool(0)
    EXPECT_NE(message_of([&] { DataLoader(options).generate(flags, 0); }).find("flag"), std::string::npos);
  }
  {
    TensorMetadata unknown_rank;
    unknown_rank.add("r", DType::kFloat32, std::nullopt);
    EXPECT_NE(message_of([&] { DataLoader().generate(unknown_rank, 0); }).find("r |"), std::string::npos);
    DataLoaderOptions options;
    options.input_shapes = {{"r", {2, 2}}};
    EXPECT_EQ(DataLoader(options).generate(unknown_rank, 0)[0].second.shape(), (Shape{2, 2}));
  }
  {
    DataLoaderOptions options;
    options.seed = 0xffffffffu;
    options.iterations = 2;
    DataLoader loader(options);
    EXPECT_NO_THROW(loader.generate(metadata, 0));
    EXPECT_NE(message_of([&] { loader.generate(metadata, 1); }).find("2**32 - 1"), std::string::npos);
  }
}

// ---------------------------------------------------------------------------------------------
// Peer test against Polygraphy's DataLoader

constexpr const char* kPolygraphyScript = R"PY(
import numpy as np
from polygraphy.comparator import DataLoader
from polygraphy.common import TensorMetadata

runner = TensorMetadata()
runner.add("f32", np.float32, ["N", 3, 4])
runner.add("f16", np.float16, [2, -1, 50])
runner.add("f64", np.float64, [5, None])
runner.add("i32", np.int32, [None, 6])
runner.add("i64", np.int64, [3, 3])
runner.add("i8", np.int8, [40])
runner.add("u8", np.uint8, [33])
runner.add("b", np.bool_, [70])
runner.add("shape_in", np.int64, [3])
runner.add("x_img", np.float32, ["B", 3, "H", "W"])
runner.add("w1", np.int16, [-1, 2])
runner.add("w2", np.uint16, ["K", 2])
runner.add("u16", np.uint16, [9])
runner.add("u32", np.uint32, [10])
runner.add("u64", np.uint64, [10])
runner.add("i16", np.int16, [7])
runner.add("finf", np.float32, [4])
runner.add("fneginf", np.float16, [4])
runner.add("scalar", np.float32, [])
runner.add("f16tiny", np.float16, [500])
runner.add("bdefault", np.bool_, [33])
runner.add("i64big", np.int64, [20])
runner.add("bconst", np.bool_, [5])

user = TensorMetadata()
user.add("x_img", None, [2, 3, 5, 7])
user.add("w*", None, [4, 2])
user.add("shape_in", None, [4, 5, 6])

val_range = {
    "": (-2.0, 3.0),
    "f16": (-1000.0, 1000.0),
    "i8": (-128, 127),
    "u8": (0, 255),
    "i64": (-2**40, 2**40),
    "b": (0, 1),
    "bdefault": (0.0, 1.0),
    "bconst": (1, 1),
    "finf": (0.0, float("inf")),
    "fneginf": (float("-inf"), 0.0),
    "f16tiny": (0.0, 1e-4),
    "u64": (0, 2**63),
    "u32": (5, 5),
    "u16": (0, 65535),
    "i16": (-32768, 32767),
    "w2": (0, 65535),
    "i32": (-7.9, 7.9),
    "i64big": (-2**62, 2**62),
}
loader = DataLoader(seed=7, iterations=3, input_metadata=user, val_range=val_range)
loader.input_metadata = runner
for i in range(3):
    feed = loader[i]
    np.savez(f"feed{i}.npz", **{name: np.asarray(array) for name, array in feed.items()})
)PY";

TEST(DataLoaderPeerTest, MatchesPolygraphyDataLoader) {
  const auto python = peer_python();
  if (!python) return;
  TempDir dir{"parity-data-loader"};
  if (!run_python(*python, dir, "polygraphy_feeds.py", kPolygraphyScript)) return;

  using V = std::vector<Dim>;
  auto f = [](int64_t v) { return Dim::fixed(v); };
  TensorMetadata metadata;
  metadata.add("f32", DType::kFloat32, V{Dim::named("N"), f(3), f(4)});
  metadata.add("f16", DType::kFloat16, V{f(2), Dim::unknown(), f(50)});
  metadata.add("f64", DType::kFloat64, V{f(5), Dim::unknown()});
  metadata.add("i32", DType::kInt32, V{Dim::unknown(), f(6)});
  metadata.add("i64", DType::kInt64, V{f(3), f(3)});
  metadata.add("i8", DType::kInt8, V{f(40)});
  metadata.add("u8", DType::kUInt8, V{f(33)});
  metadata.add("b", DType::kBool, V{f(70)});
  metadata.add("shape_in", DType::kInt64, V{f(3)});
  metadata.add("x_img", DType::kFloat32, V{Dim::named("B"), f(3), Dim::named("H"), Dim::named("W")});
  metadata.add("w1", DType::kInt16, V{Dim::unknown(), f(2)});
  metadata.add("w2", DType::kUInt16, V{Dim::named("K"), f(2)});
  metadata.add("u16", DType::kUInt16, V{f(9)});
  metadata.add("u32", DType::kUInt32, V{f(10)});
  metadata.add("u64", DType::kUInt64, V{f(10)});
  metadata.add("i16", DType::kInt16, V{f(7)});
  metadata.add("finf", DType::kFloat32, V{f(4)});
  metadata.add("fneginf", DType::kFloat16, V{f(4)});
  metadata.add("scalar", DType::kFloat32, V{});
  metadata.add("f16tiny", DType::kFloat16, V{f(500)});
  metadata.add("bdefault", DType::kBool, V{f(33)});
  metadata.add("i64big", DType::kInt64, V{f(20)});
  metadata.add("bconst", DType::kBool, V{f(5)});

  const double inf = std::numeric_limits<double>::infinity();
  DataLoaderOptions options;
  options.seed = 7;
  options.iterations = 3;
  options.input_shapes = {{"x_img", {2, 3, 5, 7}}, {"w*", {4, 2}}, {"shape_in", {4, 5, 6}}};
  options.val_ranges = {{"", {-2.0, 3.0}},
                        {"f16", {-1000.0, 1000.0}},
                        {"i8", {-128, 127}},
                        {"u8", {0, 255}},
                        {"i64", {-std::ldexp(1.0, 40), std::ldexp(1.0, 40)}},
                        {"b", {0, 1}},
                        {"bdefault", {0.0, 1.0}},
                        {"bconst", {1, 1}},
                        {"finf", {0.0, inf}},
                        {"fneginf", {-inf, 0.0}},
                        {"f16tiny", {0.0, 1e-4}},
                        {"u64", {0, std::ldexp(1.0, 63)}},
                        {"u32", {5, 5}},
                        {"u16", {0, 65535}},
                        {"i16", {-32768, 32767}},
                        {"w2", {0, 65535}},
                        {"i32", {-7.9, 7.9}},
                        {"i64big", {-std::ldexp(1.0, 62), std::ldexp(1.0, 62)}}};
  DataLoader loader(options);
  ASSERT_EQ(loader.iterations(), 3);

  for (int i = 0; i < 3; ++i) {
    const NamedTensors expected = load_npz(dir / fmt::format("feed{}.npz", i));
    const NamedTensors actual = loader.generate(metadata, i);
    ASSERT_EQ(expected.size(), actual.size()) << "iteration " << i;
    for (std::size_t k = 0; k < expected.size(); ++k) {
      ASSERT_EQ(expected[k].first, actual[k].first) << "iteration " << i << " input #" << k;
      expect_identical(expected[k].second, actual[k].second,
                       fmt::format("iteration {} input {}", i, expected[k].first));
    }
  }
  // A sanity check that the comparison saw the interesting cases.
  const NamedTensors first = loader.generate(metadata, 0);
  EXPECT_EQ(values_of<int64_t>(find_named(first, "shape_in")->second), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(find_named(first, "x_img")->second.shape(), (Shape{2, 3, 5, 7}));
  EXPECT_EQ(find_named(first, "f16")->second.shape(), (Shape{2, 1, 50}));
}

}  // namespace
}  // namespace parity::runtime
