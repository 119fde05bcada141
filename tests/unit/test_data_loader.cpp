// Tests for the default data loader and NumpyRandomState. The peer tests run numpy and
// Polygraphy (the interpreter named by PARITY_PYTHON) and compare their arrays with Parity's
// bit for bit.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "test_support.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/half.h"
#include "parity/core/logger.h"
#include "parity/core/tensor.h"
#include "parity/core/tensor_metadata.h"
#include "parity/runtime/data_loader.h"

namespace parity::runtime {
namespace {

namespace fs = std::filesystem;
using testing_support::TempDir;
using testing_support::read_bytes;

// ---------------------------------------------------------------------------------------------
// Helpers



std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

// The interpreter from PARITY_PYTHON, checked to import numpy and Polygraphy's DataLoader.
// Records a test failure (never a skip) and returns nullopt when it is unusable.
std::optional<std::string> peer_python() {
  const char* env = std::getenv("PARITY_PYTHON");
  if (!env || !*env) {
    ADD_FAILURE() << "PARITY_PYTHON is not set; the peer tests need a Python with numpy and "
                     "polygraphy (ctest sets it; by hand use "
                     "PARITY_PYTHON=/work/main/.venv/bin/python)";
    return std::nullopt;
  }
  const std::string command =
      shell_quote(env) +
      " -c 'import numpy; from polygraphy.comparator import DataLoader; "
      "from polygraphy.common import TensorMetadata' >/dev/null 2>&1";
  const int rc = std::system(command.c_str());
  if (rc != 0) {
    ADD_FAILURE() << "PARITY_PYTHON=" << env
                  << " cannot import numpy and polygraphy (from polygraphy.comparator import "
                     "DataLoader); the peer tests need both";
    return std::nullopt;
  }
  return std::string(env);
}

// Writes `script` to dir/name and runs it there. Records a failure with its output on error.
bool run_python(const std::string& python, const TempDir& dir, const std::string& name,
                const std::string& script) {
  {
    std::ofstream out(dir / name);
    out << script;
  }
  const std::string command = fmt::format("cd {} && {} {} > python.log 2>&1",
                                          shell_quote(dir.path().string()), shell_quote(python),
                                          shell_quote(name));
  const int rc = std::system(command.c_str());
  if (rc != 0) {
    ADD_FAILURE() << name << " failed (status " << rc << "):\n" << read_bytes(dir / "python.log");
    return false;
  }
  return true;
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  std::vector<T> v(static_cast<std::size_t>(t.size()));
  if (!v.empty()) std::memcpy(v.data(), t.raw(), v.size() * sizeof(T));
  return v;
}

// Index of the first element whose bytes differ, or -1.
int64_t first_difference(const TensorView& a, const TensorView& b) {
  const std::size_t width = storage_bytes(a.dtype(), 1);
  const auto* pa = static_cast<const unsigned char*>(a.raw());
  const auto* pb = static_cast<const unsigned char*>(b.raw());
  for (int64_t i = 0; i < a.size(); ++i)
    if (std::memcmp(pa + i * width, pb + i * width, width) != 0) return i;
  return -1;
}

std::string element_string(const TensorView& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: return fmt::format("{}", t.data<float>()[i]);
    case DType::kFloat64: return fmt::format("{}", t.data<double>()[i]);
    case DType::kFloat16: return fmt::format("{} (0x{:04x})", float16_bits_to_float(t.data<uint16_t>()[i]), t.data<uint16_t>()[i]);
    case DType::kInt8: return fmt::format("{}", t.data<int8_t>()[i]);
    case DType::kInt16: return fmt::format("{}", t.data<int16_t>()[i]);
    case DType::kInt32: return fmt::format("{}", t.data<int32_t>()[i]);
    case DType::kInt64: return fmt::format("{}", t.data<int64_t>()[i]);
    case DType::kUInt8: return fmt::format("{}", t.data<uint8_t>()[i]);
    case DType::kUInt16: return fmt::format("{}", t.data<uint16_t>()[i]);
    case DType::kUInt32: return fmt::format("{}", t.data<uint32_t>()[i]);
    case DType::kUInt64: return fmt::format("{}", t.data<uint64_t>()[i]);
    case DType::kBool: return fmt::format("{}", t.data<bool>()[i]);
    default: return "?";
  }
}

// EXPECTs `actual` to equal `expected` bit for bit (dtype, shape, bytes).
void expect_identical(const TensorView& expected, const TensorView& actual, const std::string& what) {
  ASSERT_EQ(dtype_name(expected.dtype()), dtype_name(actual.dtype())) << what;
  ASSERT_EQ(shape_to_string(expected.shape()), shape_to_string(actual.shape())) << what;
  const int64_t diff = first_difference(expected, actual);
  EXPECT_EQ(diff, -1) << what << ": first difference at flat index " << diff << ": numpy "
                      << (diff >= 0 ? element_string(expected, diff) : "") << ", Parity "
                      << (diff >= 0 ? element_string(actual, diff) : "");
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
// NumpyRandomState, self-contained checks

TEST(RandomStateTest, SeedingMatchesInitGenrand) {
  // numpy's legacy seeding of an int is MT19937's init_genrand, as std::mt19937(seed) does.
  for (uint32_t seed : {0u, 1u, 7u, 5489u, 123456789u, 0xffffffffu}) {
    NumpyRandomState state(seed);
    std::mt19937 reference(seed);
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(state.next_uint32(), reference()) << seed << " " << i;
  }
}

TEST(RandomStateTest, RandomSampleDocumentedValues) {
  NumpyRandomState state(1);
  EXPECT_DOUBLE_EQ(state.random_sample(), 0.417022004702574);
  EXPECT_DOUBLE_EQ(state.random_sample(), 0.7203244934421581);
  EXPECT_DOUBLE_EQ(state.random_sample(), 0.00011437481734488664);
  EXPECT_DOUBLE_EQ(state.random_sample(), 0.30233257263183977);
}

TEST(RandomStateTest, SingleValueRangeDrawsNothing) {
  NumpyRandomState a(3), b(3);
  std::vector<int64_t> out(10);
  a.randint_inclusive<int64_t>(-5, -5, out);
  for (int64_t v : out) EXPECT_EQ(v, -5);
  bool flags[10];
  a.randint_inclusive<bool>(true, true, std::span<bool>(flags));
  for (bool f : flags) EXPECT_TRUE(f);
  EXPECT_EQ(a.next_uint32(), b.next_uint32());
}

TEST(RandomStateTest, RandintRejectsInvertedRange) {
  NumpyRandomState state(1);
  std::vector<int32_t> out(3);
  EXPECT_THROW(state.randint_inclusive<int32_t>(4, 3, out), InvalidInputError);
}

TEST(RandomStateTest, DoubleToFloat16RoundsOnceFromDouble) {
  // 1 + 2^-11 + 2^-40 rounds up to 1 + 2^-10 directly; through float32 it would tie to 1.0.
  EXPECT_EQ(double_to_float16_bits(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 0x3c01);
  EXPECT_EQ(double_to_float16_bits(1.0 + std::ldexp(1.0, -11)), 0x3c00);   // tie to even
  EXPECT_EQ(double_to_float16_bits(1.0 + 3 * std::ldexp(1.0, -11)), 0x3c02);  // tie to even
  EXPECT_EQ(double_to_float16_bits(std::ldexp(1.0, -25)), 0x0000);  // tie to even (zero)
  EXPECT_EQ(double_to_float16_bits(std::ldexp(1.0, -25) + std::ldexp(1.0, -50)), 0x0001);
  EXPECT_EQ(double_to_float16_bits(-std::ldexp(1.0, -24)), 0x8001);
  EXPECT_EQ(double_to_float16_bits(std::ldexp(1023.0, -24) + std::ldexp(1.0, -25)), 0x0400);
  EXPECT_EQ(double_to_float16_bits(65504.0), 0x7bff);
  EXPECT_EQ(double_to_float16_bits(65519.99), 0x7bff);
  EXPECT_EQ(double_to_float16_bits(65520.0), 0x7c00);
  EXPECT_EQ(double_to_float16_bits(-1e300), 0xfc00);
  EXPECT_EQ(double_to_float16_bits(-0.0), 0x8000);
  EXPECT_EQ(double_to_float16_bits(std::numeric_limits<double>::infinity()), 0x7c00);
  EXPECT_EQ(double_to_float16_bits(std::numeric_limits<double>::quiet_NaN()) & 0x7e00, 0x7e00);
  EXPECT_EQ(double_to_float16_bits(std::numeric_limits<double>::denorm_min()), 0x0000);
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
  EXPECT_NE(log.find("Input tensor: imgae | Metadata was provided, but the input does not exist"), std::string::npos) << log;
  EXPECT_NE(log.find("Input tensor wildcard: zz* | Metadata was provided"), std::string::npos) << log;
  EXPECT_NE(log.find("Assuming shape is a shape tensor. Setting input values to: [8, 9, 10]"), std::string::npos) << log;
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
// Peer tests against numpy

constexpr const char* kRandintScript = R"PY(
import numpy as np

seeds = [0, 1, 7, 12345, 4294967295]
randint_seeds = [0, 7, 4294967295]
dtypes = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"]
sizes = [1, 37, 700]

def ranges(dt):
    if dt == "bool":
        return [(0, 2), (0, 1), (1, 2)]
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    candidates = [
        (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (3, 4), (-3, 4), (-1, 1), (-100, 100),
        (0, 127), (0, 128), (0, 129), (0, 255), (0, 256), (0, 257), (1, 256), (-128, 128),
        (0, 2**15), (0, 2**16 - 1), (0, 2**16), (0, 2**16 + 1), (-2**15, 2**15),
        (0, 2**31 + 5), (-2**31, 2**31), (0, 2**32 - 1), (0, 2**32), (0, 2**32 + 1),
        (5, 2**32 + 6), (0, 2**33), (-2**40, 7), (0, 2**53 + 3), (0, 2**63), (-2**63, 2**63 - 1),
        (lo, hi + 1), (lo, lo + 1), (hi, hi + 1), (lo, lo + 2), (hi - 2, hi + 1), (lo, hi),
        (lo + 1, hi + 1), (lo // 2, hi // 2 + 1),
    ]
    out = []
    for a, b in candidates:
        if a >= lo and b - 1 <= hi and a < b and (a, b) not in out:
            out.append((a, b))
    return out

arrays = {}
manifest = []
for seed in seeds:
    arrays[f"sample_{seed}"] = np.random.RandomState(seed).random_sample(size=2000)
    arrays[f"raw_{seed}"] = np.random.RandomState(seed).randint(0, 2**32, size=50, dtype=np.uint32)
for seed in randint_seeds:
    chain = np.random.RandomState(seed)
    for dt in dtypes:
        for a, b in ranges(dt):
            for n in sizes:
                key = f"c{len(manifest)}"
                rs = np.random.RandomState(seed)
                arrays[key] = rs.randint(a, b, size=n, dtype=dt)
                arrays[key + "_tail"] = rs.random_sample(size=3)
                arrays[key + "_chain"] = chain.randint(a, b, size=n, dtype=dt)
                manifest.append(f"{key} {seed} {dt} {a} {b - 1} {n}")
        # A random_sample between dtypes in the chain, too.
        arrays[f"chain_{seed}_{dt}"] = chain.random_sample(size=2)

# float64 -> float16 casts: specials, random doubles over the whole range, and exact ties
# between adjacent float16 values with their double neighbours.
rng = np.random.RandomState(99)
values = [0.0, -0.0, 1.0, -1.0, 65504.0, 65519.999, 65520.0, 1e300, -1e300, 2.0**-24, 2.0**-25,
          2.0**-25 * 1.0000001, 2.0**-26, 5e-324, np.inf, -np.inf, np.nan]
exps = rng.randint(-30, 18, size=5000)
values += list(rng.random_sample(5000) * 2.0 ** exps * np.where(rng.randint(0, 2, 5000) == 1, 1, -1))
halves = rng.randint(0, 0x7bff, size=3000).astype(np.uint16)
lo = halves.view(np.float16).astype(np.float64)
hi = (halves + 1).view(np.float16).astype(np.float64)
mid = (lo + hi) / 2
values += list(mid) + list(np.nextafter(mid, np.inf)) + list(np.nextafter(mid, -np.inf)) + list(-mid)
f64 = np.array(values, dtype=np.float64)
np.save("f16_in.npy", f64)
np.save("f16_out.npy", f64.astype(np.float16))

np.savez("randint.npz", **arrays)
with open("manifest.txt", "w") as f:
    f.write("\n".join(manifest) + "\n")
)PY";

template <typename T>
T parse_bound(const std::string& text) {
  if constexpr (std::is_same_v<T, bool>) return std::stoi(text) != 0;
  else if constexpr (std::is_signed_v<T>) return static_cast<T>(std::stoll(text));
  else return static_cast<T>(std::stoull(text));
}

template <typename T>
DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::kBool;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::kUInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::kUInt32;
  else return DType::kUInt64;
}

struct RandintCase {
  std::string key;
  uint32_t seed;
  std::string dtype, low, high;
  int64_t n;
};

// Draws one case from `state` and compares with numpy's array.
template <typename T>
void check_randint(NumpyRandomState& state, const RandintCase& c, const Tensor& expected,
                   const std::string& what) {
  // std::vector<bool> is packed; use a plain buffer for bool.
  std::unique_ptr<T[]> buffer(new T[static_cast<std::size_t>(c.n)]);
  state.randint_inclusive<T>(parse_bound<T>(c.low), parse_bound<T>(c.high),
                             std::span<T>(buffer.get(), static_cast<std::size_t>(c.n)));
  const TensorView actual(dtype_of<T>(), Shape{c.n}, buffer.get());
  expect_identical(expected, actual, what);
}

void dispatch_randint(NumpyRandomState& state, const RandintCase& c, const Tensor& expected,
                      const std::string& what) {
  if (c.dtype == "int8") check_randint<int8_t>(state, c, expected, what);
  else if (c.dtype == "int16") check_randint<int16_t>(state, c, expected, what);
  else if (c.dtype == "int32") check_randint<int32_t>(state, c, expected, what);
  else if (c.dtype == "int64") check_randint<int64_t>(state, c, expected, what);
  else if (c.dtype == "uint8") check_randint<uint8_t>(state, c, expected, what);
  else if (c.dtype == "uint16") check_randint<uint16_t>(state, c, expected, what);
  else if (c.dtype == "uint32") check_randint<uint32_t>(state, c, expected, what);
  else if (c.dtype == "uint64") check_randint<uint64_t>(state, c, expected, what);
  else if (c.dtype == "bool") check_randint<bool>(state, c, expected, what);
  else ADD_FAILURE() << "unknown dtype " << c.dtype;
}

void expect_samples(NumpyRandomState& state, const Tensor& expected, const std::string& what) {
  Tensor actual = Tensor::zeros(DType::kFloat64, expected.shape());
  state.random_sample(actual.mutable_span<double>());
  expect_identical(expected, actual, what);
}

TEST(RandomStatePeerTest, MatchesNumpyRandomState) {
  const auto python = peer_python();
  if (!python) return;
  TempDir dir{"parity-data-loader"};
  if (!run_python(*python, dir, "randint.py", kRandintScript)) return;
  const NamedTensors arrays = load_npz(dir / "randint.npz");
  std::map<std::string, const Tensor*> by_name;
  for (const auto& [name, tensor] : arrays) by_name[name] = &tensor;
  auto get = [&](const std::string& name) -> const Tensor& {
    auto it = by_name.find(name);
    if (it == by_name.end()) throw std::runtime_error("randint.npz lacks " + name);
    return *it->second;
  };

  for (uint32_t seed : {0u, 1u, 7u, 12345u, 4294967295u}) {
    NumpyRandomState state(seed);
    expect_samples(state, get(fmt::format("sample_{}", seed)), fmt::format("random_sample seed {}", seed));
    NumpyRandomState raw(seed);
    const Tensor& expected = get(fmt::format("raw_{}", seed));
    for (int64_t i = 0; i < expected.size(); ++i)
      EXPECT_EQ(raw.next_uint32(), expected.data<uint32_t>()[i]) << "seed " << seed << " draw " << i;
  }

  std::vector<RandintCase> cases;
  {
    std::istringstream manifest(read_bytes(dir / "manifest.txt"));
    RandintCase c;
    while (manifest >> c.key >> c.seed >> c.dtype >> c.low >> c.high >> c.n) cases.push_back(c);
  }
  ASSERT_GT(cases.size(), 1000u);
  std::map<uint32_t, NumpyRandomState> chains;
  std::string previous_dtype;
  uint32_t previous_seed = 0;
  int checked = 0;
  for (const RandintCase& c : cases) {
    const std::string what = fmt::format("seed {} {} randint({}, {} + 1, size={})", c.seed, c.dtype,
                                         c.low, c.high, c.n);
    // Fresh state: values, then the state must have consumed exactly numpy's draws.
    NumpyRandomState fresh(c.seed);
    dispatch_randint(fresh, c, get(c.key), what);
    expect_samples(fresh, get(c.key + "_tail"), what + " (random_sample after it)");
    // One long stream per seed, interleaving dtypes and random_sample.
    auto [it, inserted] = chains.try_emplace(c.seed, c.seed);
    NumpyRandomState& chain = it->second;
    if (!inserted && previous_seed == c.seed && previous_dtype != c.dtype)
      expect_samples(chain, get(fmt::format("chain_{}_{}", c.seed, previous_dtype)), "chain sample");
    dispatch_randint(chain, c, get(c.key + "_chain"), what + " (chained)");
    previous_seed = c.seed;
    previous_dtype = c.dtype;
    ++checked;
    if (HasFailure()) break;  // the first mismatch is the informative one
  }
  EXPECT_EQ(checked, static_cast<int>(cases.size()));

  // float64 -> float16 casts.
  const Tensor in = load_npy(dir / "f16_in.npy");
  const Tensor out = load_npy(dir / "f16_out.npy");
  ASSERT_EQ(in.size(), out.size());
  int mismatches = 0;
  for (int64_t i = 0; i < in.size(); ++i) {
    const double v = in.data<double>()[i];
    const uint16_t want = out.data<uint16_t>()[i];
    const uint16_t got = double_to_float16_bits(v);
    if (got != want && mismatches++ < 10)
      ADD_FAILURE() << fmt::format("float16({:a}): numpy 0x{:04x}, Parity 0x{:04x}", v, want, got);
  }
  EXPECT_EQ(mismatches, 0);
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
