// The dataset sources of --dataset: a folder of .npz files and a script with num_samples() and
// load(i), each sample loaded by index in any order; bad folders and scripts are clear errors.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/python_interpreter.h"
#include "parity/core/temporary_folder.h"
#include "parity/runtime/dataset_source.h"

namespace parity::runtime {
namespace {

namespace fs = std::filesystem;

Tensor filled(float value) {
  Tensor tensor = Tensor::zeros(DType::kFloat32, Shape{2});
  tensor.mutable_span<float>()[0] = value;
  tensor.mutable_span<float>()[1] = value + 1;
  return tensor;
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

TEST(DatasetSource, NpzFolderLoadsSamplesByIndexInFileNameOrder) {
  TemporaryFolder folder("parity-dataset-test", "the test");
  // Written out of order; file names give the order.
  for (int i : {2, 0, 1}) save_npz(folder.path() / ("sample_" + std::to_string(i) + ".npz"), {{"x", filled(10.f * i)}});
  write_text(folder.path() / "notes.txt", "not a sample");
  auto dataset = open_dataset(folder.path().string(), configured_python());
  ASSERT_EQ(dataset->size(), 3u);
  for (std::size_t i : {2u, 0u, 1u}) {
    NamedTensors feed = dataset->load(i);
    ASSERT_EQ(feed.size(), 1u);
    EXPECT_EQ(feed[0].first, "x");
    EXPECT_EQ(feed[0].second.span<float>()[0], 10.f * static_cast<float>(i));
  }
}

TEST(DatasetSource, ScriptLoadsSamplesByIndex) {
  TemporaryFolder folder("parity-dataset-test", "the test");
  const fs::path script = folder.path() / "data.py";
  write_text(script,
             "import numpy as np\n"
             "def num_samples():\n    return 7\n"
             "def load(i):\n    return {'x': np.full((3,), i, dtype=np.float32), 'n': [i, i + 1]}\n");
  auto dataset = open_dataset(script.string(), configured_python());
  ASSERT_EQ(dataset->size(), 7u);
  NamedTensors feed = dataset->load(5);
  ASSERT_EQ(feed.size(), 2u);
  EXPECT_EQ(feed[0].first, "x");
  EXPECT_EQ(feed[0].second.span<float>()[2], 5.f);
  EXPECT_EQ(feed[1].first, "n");
  EXPECT_EQ(feed[1].second.size(), 2);
  EXPECT_NE(dataset->describe().find("7 samples"), std::string::npos);
}

TEST(DatasetSource, BadSourcesAreClearErrors) {
  TemporaryFolder folder("parity-dataset-test", "the test");
  const fs::path empty = folder.path() / "empty";
  fs::create_directories(empty);
  EXPECT_THROW(open_dataset(empty.string(), configured_python()), InvalidInputError);
  EXPECT_THROW(open_dataset((folder.path() / "missing").string(), configured_python()), FileError);

  const fs::path no_load = folder.path() / "no_load.py";
  write_text(no_load, "def num_samples():\n    return 3\n");
  try {
    open_dataset(no_load.string(), configured_python());
    FAIL() << "a script without load() was accepted";
  } catch (const InvalidInputError& error) {
    EXPECT_NE(std::string(error.what()).find("defines no load"), std::string::npos) << error.what();
  }

  const fs::path raising = folder.path() / "raising.py";
  write_text(raising,
             "def num_samples():\n    return 3\n"
             "def load(i):\n    raise ValueError(f'sample {i} is corrupt')\n");
  auto dataset = open_dataset(raising.string(), configured_python());
  try {
    dataset->load(2);
    FAIL() << "a raising load() gave a sample";
  } catch (const InvalidInputError& error) {
    EXPECT_NE(std::string(error.what()).find("sample 2 is corrupt"), std::string::npos) << error.what();
  }
  // The source stays usable after a sample's error.
  EXPECT_THROW(dataset->load(0), InvalidInputError);
}

}  // namespace
}  // namespace parity::runtime
