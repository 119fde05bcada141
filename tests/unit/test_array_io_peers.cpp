// Peer tests for array files: numpy and Polygraphy (the interpreter named by PARITY_PYTHON) read
// the files Parity writes, and Parity reads theirs.
#include <gtest/gtest.h>

#include <complex>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_array_io_helpers.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/tensor.h"
#include "parity/core/half.h"

namespace parity {
namespace {

using namespace array_io_testing;

// ---------------------------------------------------------------------------------------------
// Peer tests against numpy and Polygraphy

// numpy writes; Parity reads. For every file Python also writes a reference: dtype name, shape
// and the C-order little-endian bytes (or the strings' UTF-8 bytes).
constexpr const char* kNumpyWrites = R"PY(
import json, sys
import numpy as np

out = sys.argv[1]
cases = {
    "f32_2d": np.arange(12, dtype=np.float32).reshape(3, 4) * np.float32(0.5) - np.float32(1),
    "f32_fortran": np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
    "i32_big": np.arange(-6, 6, dtype=">i4").reshape(3, 4),
    "f64_big_fortran": np.asfortranarray(np.linspace(-1, 1, 15).reshape(3, 5)).astype(">f8", order="F"),
    "bool": np.arange(10) % 3 == 0,
    "f16": (np.arange(-8, 8) / 4).astype(np.float16).reshape(4, 4),
    "i8": np.arange(-128, 128, 7, dtype=np.int8),
    "u8": np.arange(0, 256, 5, dtype=np.uint8),
    "i16": np.arange(-30000, 30000, 7001, dtype=np.int16),
    "u16_big": np.arange(0, 65535, 4097, dtype=">u2"),
    "u32": np.array([0, 1, 2**32 - 1], dtype=np.uint32),
    "i64": np.array([-(2**63), -1, 0, 2**63 - 1], dtype=np.int64),
    "u64": np.array([0, 1, 2**63, 2**64 - 1], dtype=np.uint64),
    "c64": (np.arange(6) * (1 + 2j)).astype(np.complex64).reshape(2, 3),
    "c128_big": (np.arange(4) * (0.5 - 1j)).astype(">c16"),
    "str": np.array(["a", "h\u00e9llo", "", "xyz\U0001F600"]),
    "str_fortran": np.asfortranarray(np.array([["ab", "c"], ["d", "efg"], ["", "h"]])),
    "str_big": np.array(["abc", "de"]).astype(">U3"),
    "bytes": np.array([b"ab", b"", b"xyz"]),
    "scalar_f64": np.array(3.25),
    "scalar_i64": np.array(-7),
    "scalar_str": np.array("lone"),
    "empty_f32": np.zeros((0, 3), np.float32),
    "empty_str": np.array([], dtype=str),
    "empty_3d": np.zeros((2, 0, 4), np.int16),
    "long_1d": np.arange(123457, dtype=np.int32),
}
assert cases["f32_fortran"].flags.f_contiguous and cases["f64_big_fortran"].flags.f_contiguous
ref = {}
for name, a in cases.items():
    np.save(f"{out}/{name}.npy", a)
    entry = {"shape": list(a.shape)}
    if a.dtype.kind == "U":
        entry["dtype"] = "string"
        entry["strings"] = [s.encode("utf-8").hex() for s in a.ravel(order="C").tolist()]
    elif a.dtype.kind == "S":
        entry["dtype"] = "string"
        entry["strings"] = [s.hex() for s in a.ravel(order="C").tolist()]
    else:
        entry["dtype"] = a.dtype.name
        entry["hex"] = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes().hex()
    ref[name] = entry
# Other header versions.
for version in [(2, 0), (3, 0)]:
    name = f"v{version[0]}"
    with open(f"{out}/{name}.npy", "wb") as f:
        np.lib.format.write_array(f, cases["f32_2d"], version=version)
    ref[name] = dict(ref["f32_2d"])
# Archives: keyword names keep their order; positional arrays are arr_0, arr_1...
np.savez(f"{out}/plain.npz", cases["bool"], z_first=cases["f32_2d"], words=cases["str"], big=cases["i32_big"])
np.savez_compressed(f"{out}/packed.npz", z_first=cases["f32_2d"], fortran=cases["f32_fortran"],
                    empty=cases["empty_str"], long=cases["long_1d"])
# A zip with a directory entry and a member that is not .npy: numpy reads it, and so must Parity.
import zipfile
with zipfile.ZipFile(f"{out}/extra.npz", "w") as z:
    z.writestr("notes/", b"")
    z.writestr("notes/readme.txt", b"not an array")
    z.writestr("only.npy", open(f"{out}/i8.npy", "rb").read())
assert list(np.load(f"{out}/extra.npz").keys()) == ["notes/", "notes/readme.txt", "only"]
json.dump(ref, open(f"{out}/ref.json", "w"))
)PY";

void check_against_reference(const Tensor& t, const nlohmann::json& ref, const std::string& label) {
  ASSERT_EQ(std::string(dtype_name(t.dtype())), ref.at("dtype").get<std::string>()) << label;
  EXPECT_EQ(t.shape(), ref.at("shape").get<Shape>()) << label;
  if (t.dtype() == DType::kString) {
    auto strings = t.span<std::string>();
    auto expected = ref.at("strings").get<std::vector<std::string>>();
    ASSERT_EQ(strings.size(), expected.size()) << label;
    for (std::size_t i = 0; i < strings.size(); ++i) EXPECT_EQ(hex(strings[i]), expected[i]) << label << " " << i;
  } else {
    EXPECT_EQ(hex(tensor_bytes(t)), ref.at("hex").get<std::string>()) << label;
  }
}

TEST(ArrayIoPeerTest, ParityReadsWhatNumpyWrites) {
  REQUIRE_PYTHON(python);
  TempDir dir{"parity-array-io"};
  PythonResult r = run_python(python, dir.path(), kNumpyWrites, {dir.path().string()});
  ASSERT_EQ(r.status, 0) << r.output;
  nlohmann::json ref = nlohmann::json::parse(read_bytes(dir / "ref.json"));
  ASSERT_GE(ref.size(), 28u);
  std::map<std::string, Tensor> loaded;
  for (const auto& [name, entry] : ref.items()) {
    Tensor t = load_npy(dir / (name + ".npy"));
    check_against_reference(t, entry, name);
    loaded[name] = t;
  }
  // Values computed here, independently of numpy.
  auto f32 = loaded["f32_2d"].span<float>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(f32[i], i * 0.5f - 1.0f);
  auto fortran = loaded["f32_fortran"].span<float>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(fortran[i], static_cast<float>(i));
  auto big = loaded["i32_big"].span<int32_t>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(big[i], i - 6);
  auto f64 = loaded["f64_big_fortran"].span<double>();
  for (int i = 0; i < 15; ++i) EXPECT_NEAR(f64[i], -1.0 + i / 7.0, 1e-15);
  auto mask = loaded["bool"].span<uint8_t>();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(mask[i], i % 3 == 0 ? 1 : 0);
  auto f16 = loaded["f16"].span<Float16>();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(static_cast<float>(f16[i]), (i - 8) / 4.0f);
  auto i8 = loaded["i8"].span<int8_t>();
  for (std::size_t i = 0; i < i8.size(); ++i) EXPECT_EQ(i8[i], -128 + 7 * static_cast<int>(i));
  EXPECT_EQ(loaded["u64"].span<uint64_t>()[3], UINT64_MAX);
  EXPECT_EQ(loaded["u64"].span<uint64_t>()[2], uint64_t{1} << 63);
  EXPECT_EQ(loaded["i64"].span<int64_t>()[0], INT64_MIN);
  auto c64 = loaded["c64"].span<std::complex<float>>();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c64[i], std::complex<float>(i, 2.0f * i));
  auto c128 = loaded["c128_big"].span<std::complex<double>>();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(c128[i], std::complex<double>(0.5 * i, -1.0 * i));
  std::vector<std::string> words = {"a", "h\xc3\xa9llo", "", "xyz\xf0\x9f\x98\x80"};
  auto str = loaded["str"].span<std::string>();
  EXPECT_EQ(std::vector<std::string>(str.begin(), str.end()), words);
  auto sf = loaded["str_fortran"].span<std::string>();
  EXPECT_EQ(std::vector<std::string>(sf.begin(), sf.end()), (std::vector<std::string>{"ab", "c", "d", "efg", "", "h"}));
  EXPECT_EQ(loaded["scalar_f64"].shape(), Shape{});
  EXPECT_EQ(loaded["scalar_f64"].span<double>()[0], 3.25);
  EXPECT_EQ(loaded["scalar_str"].span<std::string>()[0], "lone");
  EXPECT_EQ(loaded["empty_3d"].shape(), (Shape{2, 0, 4}));
  auto long_1d = loaded["long_1d"].span<int32_t>();
  ASSERT_EQ(long_1d.size(), 123457u);
  EXPECT_EQ(long_1d[123456], 123456);

  NamedTensors plain = load_npz(dir / "plain.npz");
  ASSERT_EQ(plain.size(), 4u);
  // numpy puts keyword arrays first, then the positional ones.
  const char* plain_names[] = {"z_first", "words", "big", "arr_0"};
  const char* plain_refs[] = {"f32_2d", "str", "i32_big", "bool"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(plain[i].first, plain_names[i]);
    check_against_reference(plain[i].second, ref.at(plain_refs[i]), std::string("plain.npz ") + plain_names[i]);
  }
  NamedTensors packed = load_npz(dir / "packed.npz");
  ASSERT_EQ(packed.size(), 4u);
  const char* packed_names[] = {"z_first", "fortran", "empty", "long"};
  const char* packed_refs[] = {"f32_2d", "f32_fortran", "empty_str", "long_1d"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(packed[i].first, packed_names[i]);
    check_against_reference(packed[i].second, ref.at(packed_refs[i]), std::string("packed.npz ") + packed_names[i]);
  }
  NamedTensors extra = load_npz(dir / "extra.npz");  // skips the directory and the text member
  ASSERT_EQ(extra.size(), 1u);
  EXPECT_EQ(extra[0].first, "only");
  check_against_reference(extra[0].second, ref.at("i8"), "extra.npz only");
}

// Parity writes; numpy reads and checks values against arrays it builds from the same formulas,
// and checks that the .npy bytes are exactly np.save's.
NamedTensors formula_arrays() {
  NamedTensors arrays;
  arrays.emplace_back("f32", make_tensor<float>(DType::kFloat32, {3, 4}, [](int64_t i) { return i * 0.5f - 1.0f; }));
  arrays.emplace_back("f64", make_tensor<double>(DType::kFloat64, {5}, [](int64_t i) { return i / 3.0; }));
  arrays.emplace_back("f16",
                      make_tensor<Float16>(DType::kFloat16, {4, 4}, [](int64_t i) { return Float16((i - 8) / 4.0f); }));
  arrays.emplace_back("i8", make_tensor<int8_t>(DType::kInt8, {10}, [](int64_t i) { return i - 5; }));
  arrays.emplace_back("u8", make_tensor<uint8_t>(DType::kUInt8, {2, 5}, [](int64_t i) { return 25 * i; }));
  arrays.emplace_back("i16", make_tensor<int16_t>(DType::kInt16, {3}, [](int64_t i) { return -1000 * i; }));
  arrays.emplace_back("u16", make_tensor<uint16_t>(DType::kUInt16, {3}, [](int64_t i) { return 30000 * i; }));
  arrays.emplace_back("i32", make_tensor<int32_t>(DType::kInt32, {1, 2, 1, 3, 1}, [](int64_t i) { return i * i - 3; }));
  arrays.emplace_back("u32", make_tensor<uint32_t>(DType::kUInt32, {2}, [](int64_t i) { return i ? UINT32_MAX : 0u; }));
  arrays.emplace_back("i64", make_tensor<int64_t>(DType::kInt64, {3}, [](int64_t i) {
                        return i == 0 ? INT64_MIN : i == 1 ? -1 : INT64_MAX;
                      }));
  arrays.emplace_back("u64", make_tensor<uint64_t>(DType::kUInt64, {4}, [](int64_t i) {
    const uint64_t v[] = {0, 1, uint64_t{1} << 63, UINT64_MAX};
    return v[i];
  }));
  arrays.emplace_back("bool", make_tensor<uint8_t>(DType::kBool, {10}, [](int64_t i) { return i % 3 == 0; }));
  arrays.emplace_back("c64", make_tensor<std::complex<float>>(DType::kComplex64, {2, 3}, [](int64_t i) {
    return std::complex<float>(i, 2.0f * i);
  }));
  arrays.emplace_back("c128", make_tensor<std::complex<double>>(DType::kComplex128, {4}, [](int64_t i) {
    return std::complex<double>(static_cast<double>(i), 0.0) * std::complex<double>(0.5, -1.0);  // +0 imag at 0
  }));
  arrays.emplace_back("str", make_strings({4}, {"a", "h\xc3\xa9llo", "", "xyz\xf0\x9f\x98\x80"}));
  arrays.emplace_back("str2d", make_strings({2, 2}, {"ab", "c", "d", "efgh"}));
  arrays.emplace_back("scalar", make_tensor<double>(DType::kFloat64, {}, [](int64_t) { return 3.25; }));
  arrays.emplace_back("scalar_str", make_strings({}, {"lone"}));
  arrays.emplace_back("empty", Tensor::zeros(DType::kFloat32, {0, 3}));
  arrays.emplace_back("empty_str", Tensor::zeros(DType::kString, {0}));
  arrays.emplace_back("wide", make_tensor<int32_t>(DType::kInt32, {300001}, [](int64_t i) { return i; }));
  arrays.emplace_back("long_dims", make_tensor<uint8_t>(DType::kUInt8, {1234567890123, 0}, [](int64_t) { return 0; }));
  // With 36 dims of 1 the dict plus numpy's growth-axis spaces ends exactly on a 64-byte boundary,
  // so numpy pads with a full 64 spaces: one space fewer or more would show in the bytes.
  arrays.emplace_back("rank36", make_tensor<uint8_t>(DType::kUInt8, Shape(36, 1), [](int64_t) { return 7; }));
  return arrays;
}

constexpr const char* kNumpyFormulas = R"PY(
import numpy as np
i = np.arange
expected = {
    "f32": (i(12, dtype=np.float32) * np.float32(0.5) - np.float32(1)).reshape(3, 4),
    "f64": i(5) / 3.0,
    "f16": ((i(16) - 8) / 4).astype(np.float16).reshape(4, 4),
    "i8": (i(10) - 5).astype(np.int8),
    "u8": (25 * i(10)).astype(np.uint8).reshape(2, 5),
    "i16": (-1000 * i(3)).astype(np.int16),
    "u16": (30000 * i(3)).astype(np.uint16),
    "i32": (i(6) * i(6) - 3).astype(np.int32).reshape(1, 2, 1, 3, 1),
    "u32": np.array([0, 2**32 - 1], np.uint32),
    "i64": np.array([-(2**63), -1, 2**63 - 1], np.int64),
    "u64": np.array([0, 1, 2**63, 2**64 - 1], np.uint64),
    "bool": i(10) % 3 == 0,
    "c64": (i(6) * (1 + 2j)).astype(np.complex64).reshape(2, 3),
    "c128": i(4) * (0.5 - 1j),
    "str": np.array(["a", "h\u00e9llo", "", "xyz\U0001F600"]),
    "str2d": np.array([["ab", "c"], ["d", "efgh"]]),
    "scalar": np.array(3.25),
    "scalar_str": np.array("lone"),
    "empty": np.zeros((0, 3), np.float32),
    "empty_str": np.array([], dtype=str),
    "wide": i(300001, dtype=np.int32),
    "long_dims": np.zeros((1234567890123, 0), np.uint8),
    "rank36": np.full((1,) * 36, 7, np.uint8),
}
errors = []
def same(name, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        errors.append(f"{name}: got {got.dtype} {got.shape} {got!r}, want {want.dtype} {want.shape} {want!r}")
)PY";

TEST(ArrayIoPeerTest, NumpyReadsWhatParityWrites) {
  REQUIRE_PYTHON(python);
  TempDir dir{"parity-array-io"};
  NamedTensors arrays = formula_arrays();
  for (const auto& [name, tensor] : arrays) save_npy(dir / (name + ".npy"), tensor);
  save_npz(dir / "plain.npz", arrays);
  save_npz(dir / "packed.npz", arrays, /*compress=*/true);
  save_npz(dir / "none.npz", {});
  std::string script = std::string(kNumpyFormulas) + R"PY(
import io, sys, zipfile
d = sys.argv[1]
for name, want in expected.items():
    path = f"{d}/{name}.npy"
    same(name, np.load(path, allow_pickle=False), want)
    buf = io.BytesIO()
    np.save(buf, want)
    mine = open(path, "rb").read()
    if mine != buf.getvalue():
        errors.append(f"{name}.npy bytes differ from np.save:\n  parity {mine[:200]!r}\n  numpy  {buf.getvalue()[:200]!r}")
for archive, method in [("plain", zipfile.ZIP_STORED), ("packed", zipfile.ZIP_DEFLATED)]:
    with np.load(f"{d}/{archive}.npz", allow_pickle=False) as z:
        if list(z.keys()) != list(expected):
            errors.append(f"{archive}.npz names {list(z.keys())}")
        for name, want in expected.items():
            same(f"{archive}.npz/{name}", z[name], want)
    with zipfile.ZipFile(f"{d}/{archive}.npz") as z:
        if z.testzip() is not None:
            errors.append(f"{archive}.npz fails its CRC check")
        for info in z.infolist():
            if info.compress_type != method:
                errors.append(f"{archive}.npz/{info.filename} compress_type {info.compress_type}")
with np.load(f"{d}/none.npz") as z:
    if list(z.keys()):
        errors.append("none.npz is not empty")
print("\n".join(errors))
sys.exit(1 if errors else 0)
)PY";
  expect_python_ok(python, dir.path(), script, {dir.path().string()}, "numpy reading Parity's files");
}

// Polygraphy saves input data; Parity loads it.
TEST(ArrayIoPeerTest, ParityLoadsPolygraphyInputs) {
  REQUIRE_PYTHON(python);
  TempDir dir{"parity-array-io"};
  std::string script = std::string(kNumpyFormulas) + R"PY(
import base64, io, json, sys
from polygraphy.json import save_json, load_json
d = sys.argv[1]
data = [
    {"z_f32": expected["f32"], "a_i64": expected["i64"], "mask": expected["bool"]},
    {},
    {"z_f32": expected["f32"] * 2, "words": expected["str"], "s": expected["scalar"], "e": expected["empty"]},
]
save_json(data, f"{d}/inputs.json")
# The legacy marker, checked to be something Polygraphy itself still reads.
buf = io.BytesIO()
np.save(buf, expected["c64"])
legacy = [{"old": {"__polygraphy_encoded_ndarray": "polygraphy_serialized_json_type",
                   "array": base64.b64encode(buf.getvalue()).decode()}}]
json.dump(legacy, open(f"{d}/legacy.json", "w"), indent=4)
same("legacy", load_json(f"{d}/legacy.json")[0]["old"], expected["c64"])
print("\n".join(errors))
sys.exit(1 if errors else 0)
)PY";
  expect_python_ok(python, dir.path(), script, {dir.path().string()}, "polygraphy save_json");

  std::map<std::string, Tensor> by_name;
  for (auto& [name, tensor] : formula_arrays()) by_name[name] = tensor;
  std::vector<NamedTensors> iterations = load_inputs_json(dir / "inputs.json");
  ASSERT_EQ(iterations.size(), 3u);
  ASSERT_EQ(iterations[0].size(), 3u);
  EXPECT_EQ(iterations[0][0].first, "z_f32");
  EXPECT_EQ(iterations[0][1].first, "a_i64");
  EXPECT_EQ(iterations[0][2].first, "mask");
  EXPECT_TRUE(identical(iterations[0][0].second, by_name["f32"]));
  EXPECT_TRUE(identical(iterations[0][1].second, by_name["i64"]));
  EXPECT_TRUE(identical(iterations[0][2].second, by_name["bool"]));
  EXPECT_TRUE(iterations[1].empty());
  ASSERT_EQ(iterations[2].size(), 4u);
  EXPECT_EQ(iterations[2][0].first, "z_f32");
  auto doubled = iterations[2][0].second.span<float>();
  for (int i = 0; i < 12; ++i) EXPECT_EQ(doubled[i], 2 * (i * 0.5f - 1.0f));
  EXPECT_TRUE(identical(iterations[2][1].second, by_name["str"]));
  EXPECT_TRUE(identical(iterations[2][2].second, by_name["scalar"]));
  EXPECT_TRUE(identical(iterations[2][3].second, by_name["empty"]));

  std::vector<NamedTensors> legacy = load_inputs_json(dir / "legacy.json");
  ASSERT_EQ(legacy.size(), 1u);
  ASSERT_EQ(legacy[0].size(), 1u);
  EXPECT_TRUE(identical(legacy[0][0].second, by_name["c64"]));
}

// Parity saves input data; Polygraphy loads it, and Polygraphy's own save_json of the same data
// gives the same text.
TEST(ArrayIoPeerTest, PolygraphyLoadsParityInputsAndWritesTheSameText) {
  REQUIRE_PYTHON(python);
  TempDir dir{"parity-array-io"};
  std::map<std::string, Tensor> by_name;
  for (auto& [name, tensor] : formula_arrays()) by_name[name] = tensor;
  const std::string tricky = "in\"put/\xc3\xa9\t\x7f\\\xf0\x9f\x98\x80 \x01";
  std::vector<NamedTensors> iterations = {
      {{"z_f32", by_name["f32"]}, {"a_i64", by_name["i64"]}, {tricky, by_name["str"]}},
      {},
      {{"c", by_name["c64"]}, {"s", by_name["scalar"]}, {"e", by_name["empty"]}, {"h", by_name["f16"]},
       {"u", by_name["u64"]}, {"b", by_name["bool"]}, {"w", by_name["wide"]}}};
  save_inputs_json(dir / "parity.json", iterations);
  std::string script = std::string(kNumpyFormulas) + R"PY(
import sys
from polygraphy.json import save_json, load_json
d = sys.argv[1]
tricky = "in\"put/\u00e9\t\x7f\\\U0001F600 \x01"
data = [
    {"z_f32": expected["f32"], "a_i64": expected["i64"], tricky: expected["str"]},
    {},
    {"c": expected["c64"], "s": expected["scalar"], "e": expected["empty"], "h": expected["f16"],
     "u": expected["u64"], "b": expected["bool"], "w": expected["wide"]},
]
loaded = load_json(f"{d}/parity.json")
if len(loaded) != len(data):
    errors.append(f"{len(loaded)} iterations")
for k, (got, want) in enumerate(zip(loaded, data)):
    if list(got) != list(want):
        errors.append(f"iteration {k} names {list(got)}")
    for name in want:
        if name in got:
            same(f"iteration {k} {name!r}", got[name], want[name])
save_json(data, f"{d}/polygraphy.json")
if open(f"{d}/polygraphy.json", "rb").read() != open(f"{d}/parity.json", "rb").read():
    errors.append("text differs from polygraphy's save_json")
print("\n".join(errors))
sys.exit(1 if errors else 0)
)PY";
  expect_python_ok(python, dir.path(), script, {dir.path().string()}, "polygraphy load_json");
  // Also byte-compare here so the failure shows where the text differs.
  if (fs::exists(dir / "polygraphy.json")) {
    std::string mine = read_bytes(dir / "parity.json"), theirs = read_bytes(dir / "polygraphy.json");
    if (mine != theirs) {
      std::size_t at = std::mismatch(mine.begin(), mine.end(), theirs.begin(), theirs.end()).first - mine.begin();
      ADD_FAILURE() << "texts differ at byte " << at << ": parity \"" << mine.substr(at > 40 ? at - 40 : 0, 120)
                    << "\" vs polygraphy \"" << theirs.substr(at > 40 ? at - 40 : 0, 120) << "\"";
    }
  } else {
    ADD_FAILURE() << "polygraphy.json was not written";
  }
}

}  // namespace
}  // namespace parity
