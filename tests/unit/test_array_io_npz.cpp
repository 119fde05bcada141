// Tests for .npz archives: stored and compressed members, and bad archives.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "test_array_io_helpers.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/tensor.h"

namespace parity {
namespace {

using namespace array_io_testing;

// ---------------------------------------------------------------------------------------------
// .npz

NamedTensors sample_arrays() {
  return {{"z_last_name_first", sample_tensor(DType::kFloat32, {2, 3})},
          {"ids", sample_tensor(DType::kInt64, {4})},
          {"mask", sample_tensor(DType::kBool, {3, 1})},
          {"words", sample_tensor(DType::kString, {2, 2})},
          {"empty", sample_tensor(DType::kFloat64, {0, 5})},
          {"scalar", sample_tensor(DType::kUInt16, {})},
          {"n\xc3\xa4me/with slash", sample_tensor(DType::kComplex64, {3})}};
}

TEST(NpzTest, RoundTripsStoredAndCompressed) {
  TempDir dir{"parity-array-io"};
  NamedTensors arrays = sample_arrays();
  arrays.emplace_back("zeros", Tensor::zeros(DType::kFloat32, {10000}));
  save_npz(dir / "plain.npz", arrays);
  save_npz(dir / "packed.npz", arrays, /*compress=*/true);
  expect_same_arrays(load_npz(dir / "plain.npz"), arrays, "plain");
  expect_same_arrays(load_npz(dir / "packed.npz"), arrays, "packed");
  EXPECT_GT(fs::file_size(dir / "plain.npz"), 40000u);
  EXPECT_LT(fs::file_size(dir / "packed.npz"), 10000u);

  save_npz(dir / "none.npz", {});
  EXPECT_TRUE(load_npz(dir / "none.npz").empty());
}

TEST(NpzTest, RejectsBadArchivesNamingTheFile) {
  TempDir dir{"parity-array-io"};
  NamedTensors dup = {{"a", sample_tensor(DType::kFloat32, {1})}, {"a", sample_tensor(DType::kFloat32, {2})}};
  expect_error<InvalidInputError>([&] { save_npz(dir / "dup.npz", dup); }, {"'a'", "dup.npz"}, "duplicate");
  EXPECT_FALSE(fs::exists(dir / "dup.npz"));
  NamedTensors bf = {{"ok", sample_tensor(DType::kFloat32, {1})}, {"b", Tensor::zeros(DType::kBFloat16, {2})}};
  expect_error<UnsupportedError>([&] { save_npz(dir / "bf.npz", bf); }, {"bfloat16", "'b'"}, "bfloat16 member");
  EXPECT_FALSE(fs::exists(dir / "bf.npz"));

  expect_error<FileError>([&] { load_npz(dir / "missing.npz"); }, {"missing.npz"}, "missing");
  write_bytes(dir / "text.npz", "this is not a zip archive at all");
  expect_error<InvalidInputError>([&] { load_npz(dir / "text.npz"); }, {"text.npz", "zip"}, "not a zip");
  write_bytes(dir / "empty.npz", "");
  expect_error<InvalidInputError>([&] { load_npz(dir / "empty.npz"); }, {"empty.npz"}, "empty file");

  // A stored member with one data byte changed: still a valid .npy, so only the CRC catches it.
  NamedTensors one = {{"weights", sample_tensor(DType::kFloat32, {4})}};
  save_npz(dir / "one.npz", one);
  std::string zip = read_bytes(dir / "one.npz");
  std::size_t magic = zip.find("\x93NUMPY");
  ASSERT_NE(magic, std::string::npos);
  std::string corrupt = zip;
  corrupt[magic + encode_npy(one[0].second).size() - 1] ^= 0x01;
  write_bytes(dir / "corrupt.npz", corrupt);
  expect_error<InvalidInputError>([&] { load_npz(dir / "corrupt.npz"); }, {"corrupt.npz", "weights.npy", "CRC"},
                                  "corrupt member");
  write_bytes(dir / "cut.npz", zip.substr(0, zip.size() / 2));
  expect_error<InvalidInputError>([&] { load_npz(dir / "cut.npz"); }, {"cut.npz"}, "truncated archive");
  // Every truncation is rejected cleanly.
  for (std::size_t n = 1; n < zip.size(); n += 7) {
    write_bytes(dir / "prefix.npz", zip.substr(0, n));
    try {
      load_npz(dir / "prefix.npz");
      ADD_FAILURE() << "prefix " << n << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("prefix.npz"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace parity
