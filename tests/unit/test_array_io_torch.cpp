// decode_torch_save on archives torch itself wrote (through the venv's Python, $PARITY_PYTHON, which
// scripts/setup.sh gives torch), so the sanitizer build checks the zip and pickle walk on real data:
// strided views, a storage offset, an expanded (stride 0) view, a _rebuild_tensor_v3 dtype, bool,
// bfloat16, a scalar and an empty tensor; and edits of one payload that must be refused.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/temporary_folder.h"

namespace parity {
namespace {

// Each line of the script's output folder: <name>.pt, torch.save of the tensor named so.
constexpr const char* kScript = R"PY(
import sys, torch
folder = sys.argv[1]
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
tensors = {
    "transposed": base.t(),              # (6, 4), strides (1, 6)
    "sliced": base[1:3, 2:5],            # offset 8, strides (6, 1)
    "stepped": base[::2, ::3],           # strides (12, 3)
    "expanded": torch.arange(3.0).expand(2, 3),
    "uint16": torch.tensor([1, 65535], dtype=torch.uint16),
    "flags": torch.tensor([True, False, True]),
    "bf16": torch.tensor([1.0, -2.5], dtype=torch.bfloat16),
    "scalar": torch.tensor(2.5, dtype=torch.float64),
    "empty": torch.zeros((0, 3)),
}
for name, tensor in tensors.items():
    torch.save(tensor, f"{folder}/{name}.pt")
)PY";

class TorchSaveTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    folder_ = new TemporaryFolder("parity-torch-test", "torch.save test files");
    std::filesystem::path script = folder_->path() / "make.py";
    std::ofstream(script) << kScript;
    const char* configured = std::getenv("PARITY_PYTHON");
    std::string python = configured && *configured ? configured : "python3";
    std::string command = "'" + python + "' '" + script.string() + "' '" + folder_->path().string() + "'";
    status_ = std::system(command.c_str());
  }
  static void TearDownTestSuite() {
    delete folder_;
    folder_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(status_, 0) << "the venv's Python could not write torch.save files (is torch installed? "
                             "scripts/setup.sh installs it; PARITY_PYTHON names the Python)";
  }
  static std::string bytes_of(const std::string& name) {
    std::ifstream file(folder_->path() / (name + ".pt"), std::ios::binary);
    std::ostringstream out;
    out << file.rdbuf();
    return out.str();
  }
  static Tensor decode(const std::string& name) { return decode_torch_save(bytes_of(name), name); }

  static TemporaryFolder* folder_;
  static int status_;
};

TemporaryFolder* TorchSaveTest::folder_ = nullptr;
int TorchSaveTest::status_ = -1;

std::vector<float> floats(const Tensor& tensor) {
  return std::vector<float>(tensor.data<float>(), tensor.data<float>() + tensor.size());
}

TEST_F(TorchSaveTest, FollowsStridesAndOffsets) {
  Tensor transposed = decode("transposed");
  EXPECT_EQ(transposed.dtype(), DType::kFloat32);
  EXPECT_EQ(transposed.shape(), (Shape{6, 4}));
  std::vector<float> expected;
  for (int row = 0; row < 6; ++row)
    for (int column = 0; column < 4; ++column) expected.push_back(static_cast<float>(column * 6 + row));
  EXPECT_EQ(floats(transposed), expected);

  Tensor sliced = decode("sliced");
  EXPECT_EQ(sliced.shape(), (Shape{2, 3}));
  EXPECT_EQ(floats(sliced), (std::vector<float>{8, 9, 10, 14, 15, 16}));

  Tensor stepped = decode("stepped");
  EXPECT_EQ(stepped.shape(), (Shape{2, 2}));
  EXPECT_EQ(floats(stepped), (std::vector<float>{0, 3, 12, 15}));

  Tensor expanded = decode("expanded");
  EXPECT_EQ(expanded.shape(), (Shape{2, 3}));
  EXPECT_EQ(floats(expanded), (std::vector<float>{0, 1, 2, 0, 1, 2}));
}

TEST_F(TorchSaveTest, ReadsEveryKindOfStorage) {
  Tensor wide = decode("uint16");  // _rebuild_tensor_v3: an untyped storage and torch.uint16
  EXPECT_EQ(wide.dtype(), DType::kUInt16);
  EXPECT_EQ(wide.data<uint16_t>()[0], 1);
  EXPECT_EQ(wide.data<uint16_t>()[1], 65535);

  Tensor flags = decode("flags");
  EXPECT_EQ(flags.dtype(), DType::kBool);
  EXPECT_EQ(flags.shape(), (Shape{3}));
  EXPECT_EQ(std::memcmp(flags.raw(), "\1\0\1", 3), 0);

  Tensor bf16 = decode("bf16");
  EXPECT_EQ(bf16.dtype(), DType::kBFloat16);
  EXPECT_EQ(bf16.data<uint16_t>()[0], 0x3f80);  // 1.0
  EXPECT_EQ(bf16.data<uint16_t>()[1], 0xc020);  // -2.5

  Tensor scalar = decode("scalar");
  EXPECT_EQ(scalar.dtype(), DType::kFloat64);
  EXPECT_TRUE(scalar.shape().empty());
  EXPECT_EQ(scalar.data<double>()[0], 2.5);

  Tensor empty = decode("empty");
  EXPECT_EQ(empty.shape(), (Shape{0, 3}));
  EXPECT_EQ(empty.size(), 0);
}

// Every prefix of a real payload is refused with an error naming the source, never a crash.
TEST_F(TorchSaveTest, RefusesEveryTruncation) {
  std::string good = bytes_of("sliced");
  for (std::size_t length = 0; length < good.size(); length += 7) {
    try {
      decode_torch_save(good.substr(0, length), "cut payload");
      ADD_FAILURE() << "a payload cut to " << length << " of " << good.size() << " bytes was accepted";
    } catch (const Error& error) {
      EXPECT_NE(std::string(error.what()).find("cut payload"), std::string::npos) << error.what();
    }
  }
}

}  // namespace
}  // namespace parity
