// Tests for NumpyRandomState, numpy's legacy RandomState replayed without numpy. The peer test
// runs numpy (the interpreter named by PARITY_PYTHON) and compares its arrays with Parity's bit
// for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "test_data_loader_helpers.h"
#include "parity/core/array_io.h"
#include "parity/core/dtype_dispatch.h"
#include "parity/core/error.h"
#include "parity/core/tensor.h"
#include "parity/runtime/numpy_random_state.h"

namespace parity::runtime {
namespace {

using namespace parity::runtime::testing;

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

}  // namespace
}  // namespace parity::runtime
