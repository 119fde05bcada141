// ONNX model I/O: round trips on real models, external data (safe paths, save/load, > 2 GB),
// TensorProto decoding for every storage field, and clear errors for corrupt input.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/half.h"
#include "parity/onnx/model.h"
#include "parity/onnx/tensor_proto.h"

namespace parity::onnx {
namespace {

namespace fs = std::filesystem;
using ::onnx::ModelProto;
using ::onnx::TensorProto;

const fs::path kShared = PARITY_SHARED_DIR;

class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("parity-test-" + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// A one-node model y = x + w with w an initializer of n floats.
Model add_model(int64_t n, const fs::path& base_dir) {
  Model model{std::make_shared<ModelProto>(), {}, base_dir};
  auto& m = *model.proto;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("add");
  auto add_value = [&](::google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>* list, const char* name) {
    auto* v = list->Add();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
    v->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(n);
  };
  add_value(g->mutable_input(), "x");
  add_value(g->mutable_output(), "y");
  auto* node = g->add_node();
  node->set_op_type("Add");
  node->set_name("add0");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  auto* w = g->add_initializer();
  w->set_name("w");
  w->set_data_type(TensorProto::FLOAT);
  w->add_dims(n);
  std::string bytes(static_cast<std::size_t>(n) * 4, '\0');
  for (int64_t i = 0; i < n; ++i) {
    float v = static_cast<float>(i) * 0.5f;
    std::memcpy(bytes.data() + i * 4, &v, 4);
  }
  w->set_raw_data(bytes);
  return model;
}

void point_external(TensorProto* t, const std::string& location, const std::string& offset = "",
                    const std::string& length = "") {
  t->clear_raw_data();
  t->set_data_location(TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", location);
  if (!offset.empty()) add("offset", offset);
  if (!length.empty()) add("length", length);
}

template <typename E = InvalidInputError, typename Fn>
std::string expect_error(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception thrown";
  return "";
}

TEST(OnnxModel, EveryRealModelRoundTripsExactly) {
  TempDir dir;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(kShared / "models")) {
    if (entry.path().extension() != ".onnx") continue;
    ++count;
    Model original = load_model(entry.path());
    fs::path out = dir / entry.path().filename().string();
    save_model(original, out);
    Model again = load_model(out);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*original.proto, *again.proto))
        << entry.path();
  }
  EXPECT_EQ(count, 5);
}

TEST(OnnxModel, LoadsFromBytes) {
  std::string bytes = read_file(kShared / "models/silero_vad_v5.onnx");
  Model model = load_model_from_bytes(bytes, kShared / "models");
  EXPECT_GT(model->graph().node_size(), 0);
  EXPECT_TRUE(model.path.empty());
}

TEST(OnnxModel, ExternalDataSaveAndLoadKeepTheBytes) {
  TempDir dir;
  Model model = add_model(3000, dir.path());
  SaveOptions options;
  options.external_data = ExternalData::kAlways;
  save_model(model, dir / "m.onnx", options);
  ASSERT_TRUE(fs::exists(dir / "m.onnx.data"));
  Model loaded = load_model(dir / "m.onnx");
  const auto& w = loaded->graph().initializer(0);
  ASSERT_TRUE(uses_external_data(w));
  Tensor from_disk = tensor_from_proto(w, loaded.base_dir);
  Tensor original = tensor_from_proto(model->graph().initializer(0), dir.path());
  EXPECT_TRUE(identical(from_disk, original));
  // Loading eagerly inlines the data.
  LoadOptions eager;
  eager.load_external_data = true;
  Model inlined = load_model(dir / "m.onnx", eager);
  EXPECT_FALSE(uses_external_data(inlined->graph().initializer(0)));
  EXPECT_EQ(inlined->graph().initializer(0).raw_data().size(), 12000u);
  // Saving the external model elsewhere without external data inlines it.
  TempDir other;
  save_model(loaded, other / "copy.onnx");
  Model copy = load_model(other / "copy.onnx");
  EXPECT_TRUE(identical(tensor_from_proto(copy->graph().initializer(0), other.path()), original));
}

TEST(OnnxModel, SmallTensorsStayInlineBelowTheThreshold) {
  TempDir dir;
  Model model = add_model(10, dir.path());
  SaveOptions options;
  options.external_data = ExternalData::kAlways;
  options.size_threshold = 1024;
  save_model(model, dir / "m.onnx", options);
  Model loaded = load_model(dir / "m.onnx");
  EXPECT_FALSE(uses_external_data(loaded->graph().initializer(0)));
}

class HostileExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.path() / "model");
    std::ofstream(dir_.path() / "outside.bin") << std::string(64, 'x');
    std::ofstream(dir_.path() / "model/inside.bin") << std::string(64, 'x');
  }
  std::string load_with(const std::string& location, const std::string& offset = "",
                        const std::string& length = "") {
    Model model = add_model(4, dir_.path() / "model");
    point_external(model->mutable_graph()->mutable_initializer(0), location, offset, length);
    fs::path file = dir_.path() / "model/m.onnx";
    write_file_atomic(file, serialize_model(*model.proto));
    return expect_error([&] { load_model(file); });
  }
  TempDir dir_;
};

TEST_F(HostileExternalData, AbsolutePathIsRefused) {
  std::string message = load_with((dir_.path() / "outside.bin").string());
  EXPECT_NE(message.find("absolute"), std::string::npos) << message;
  EXPECT_NE(message.find("'w'"), std::string::npos) << message;
  EXPECT_NE(message.find("m.onnx"), std::string::npos) << message;
}

TEST_F(HostileExternalData, DotDotIsRefused) {
  std::string message = load_with("../outside.bin");
  EXPECT_NE(message.find(".."), std::string::npos) << message;
}

TEST_F(HostileExternalData, SymlinkLeavingTheFolderIsRefused) {
  fs::create_symlink(dir_.path() / "outside.bin", dir_.path() / "model/link.bin");
  std::string message = load_with("link.bin");
  EXPECT_NE(message.find("outside the model's folder"), std::string::npos) << message;
}

TEST_F(HostileExternalData, RangesBeyondTheFileAreRefused) {
  EXPECT_NE(load_with("inside.bin", "60", "16").find("exceeds"), std::string::npos);
  EXPECT_NE(load_with("inside.bin", "100").find("exceeds"), std::string::npos);
  EXPECT_NE(load_with("inside.bin", "abc").find("non-negative integer"), std::string::npos);
  EXPECT_NE(load_with("missing.bin").find("not found"), std::string::npos);
}

TEST_F(HostileExternalData, SymlinkInsideTheFolderIsFine) {
  fs::create_symlink(dir_.path() / "model/inside.bin", dir_.path() / "model/alias.bin");
  Model model = add_model(4, dir_.path() / "model");
  point_external(model->mutable_graph()->mutable_initializer(0), "alias.bin", "0", "16");
  fs::path file = dir_.path() / "model/m.onnx";
  write_file_atomic(file, serialize_model(*model.proto));
  Model loaded = load_model(file);
  Tensor w = tensor_from_proto(loaded->graph().initializer(0), loaded.base_dir);
  EXPECT_EQ(std::memcmp(w.raw(), "xxxxxxxxxxxxxxxx", 16), 0);
}

// LoadOptions::lazy_weights: large main-graph initializers refer to their bytes in the model file.
TEST(OnnxModel, LazyWeightsStayInTheFileAndReadBackExactly) {
  TempDir dir;
  // 100000 floats: a 400 KB weight at whatever (unaligned) offset protobuf gives it.
  save_model(add_model(100000, dir.path()), dir / "add.onnx");
  std::vector<fs::path> models{dir / "add.onnx"};
  for (const auto& entry : fs::directory_iterator(kShared / "models"))
    if (entry.path().extension() == ".onnx") models.push_back(entry.path());
  LoadOptions lazy_options;
  lazy_options.lazy_weights = true;
  int cut = 0;
  for (const auto& path : models) {
    SCOPED_TRACE(path.string());
    Model eager = load_model(path);
    Model lazy = load_model(path, lazy_options);
    ASSERT_EQ(lazy->graph().initializer_size(), eager->graph().initializer_size());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(lazy->graph().node(0), eager->graph().node(0)));
    EXPECT_EQ(lazy->graph().node_size(), eager->graph().node_size());
    for (int i = 0; i < eager->graph().initializer_size(); ++i) {
      const auto& e = eager->graph().initializer(i);
      const auto& l = lazy->graph().initializer(i);
      ASSERT_EQ(l.name(), e.name());
      if (uses_external_data(l) && !uses_external_data(e)) {
        ++cut;
        EXPECT_GE(e.raw_data().size(), 64u * 1024);
        EXPECT_FALSE(l.has_raw_data());
        auto location = resolve_external_location(l, lazy.base_dir);
        EXPECT_EQ(location.file.filename(), path.filename());
        Tensor read = tensor_from_proto(l, lazy.base_dir);
        std::size_t element = std::max<std::size_t>(1, dtype_bits(read.dtype()) / 8);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(read.raw()) % std::min<std::size_t>(element, 8), 0u);
        EXPECT_TRUE(identical(read, tensor_from_proto(e, eager.base_dir)));
      } else {
        EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(l, e));
      }
    }
    // Saved elsewhere, the weights are written inline again (streamed from the file one at a time): the
    // copy has the bytes protobuf gives the eager model.
    fs::path copy = dir / ("copy-" + path.filename().string());
    save_model(lazy, copy);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*load_model(copy).proto, *eager.proto));
    EXPECT_TRUE(read_file(copy) == serialize_model(*eager.proto));
  }
  EXPECT_GE(cut, 10);  // the add model's weight and the shared models' large ones

  // A symlinked model is loaded whole (its weights would resolve outside a link's folder).
  fs::create_symlink(dir / "add.onnx", dir / "link.onnx");
  Model linked = load_model(dir / "link.onnx", lazy_options);
  EXPECT_FALSE(uses_external_data(linked->graph().initializer(0)));
}

TEST(OnnxModel, LazyWeightsKeepTheErrorsOfDamagedFiles) {
  TempDir dir;
  LoadOptions lazy_options;
  lazy_options.lazy_weights = true;
  std::string real = read_file(kShared / "models/ppocrv4_det.onnx");
  for (std::size_t keep : {real.size() / 2, real.size() - 1, std::size_t{70000}}) {
    write_file_atomic(dir / "cut.onnx", real.substr(0, keep));
    std::string message = expect_error([&] { load_model(dir / "cut.onnx", lazy_options); });
    EXPECT_NE(message.find("cut.onnx"), std::string::npos) << message;
  }
  // A weight whose declared shape does not match its bytes is still refused, naming the tensor.
  Model model = add_model(100000, dir.path());
  model->mutable_graph()->mutable_initializer(0)->set_dims(0, 99999);
  write_file_atomic(dir / "bad.onnx", serialize_model(*model.proto));
  std::string message = expect_error([&] { load_model(dir / "bad.onnx", lazy_options); });
  EXPECT_NE(message.find("'w'"), std::string::npos) << message;
  EXPECT_NE(message.find("bad.onnx"), std::string::npos) << message;
}

TEST(OnnxModel, CorruptFilesGiveClearErrors) {
  TempDir dir;
  std::ofstream(dir / "empty.onnx").close();
  EXPECT_NE(expect_error([&] { load_model(dir / "empty.onnx"); }).find("empty"), std::string::npos);

  std::mt19937 rng(7);
  std::string noise(4096, '\0');
  for (auto& c : noise) c = static_cast<char>(rng());
  write_file_atomic(dir / "noise.onnx", noise);
  std::string message = expect_error([&] { load_model(dir / "noise.onnx"); });
  EXPECT_NE(message.find("noise.onnx"), std::string::npos) << message;

  std::string real = read_file(kShared / "models/ppocrv4_det.onnx");
  write_file_atomic(dir / "half.onnx", real.substr(0, real.size() / 2));
  message = expect_error([&] { load_model(dir / "half.onnx"); });
  EXPECT_NE(message.find("half.onnx"), std::string::npos) << message;

  message = expect_error<FileError>([&] { load_model(dir / "nothing-here.onnx"); });
  EXPECT_NE(message.find("no such file"), std::string::npos) << message;
  message = expect_error<FileError>([&] { load_model(dir.path()); });
  EXPECT_NE(message.find("directory"), std::string::npos) << message;
}

TEST(OnnxModel, DeclaredShapesMustMatchTheData) {
  TempDir dir;
  Model model = add_model(4, dir.path());
  auto* w = model->mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  for (int i = 0; i < 3; ++i) w->add_dims(1000000);
  write_file_atomic(dir / "m.onnx", serialize_model(*model.proto));
  std::string message = expect_error([&] { load_model(dir / "m.onnx"); });
  EXPECT_NE(message.find("'w'"), std::string::npos) << message;

  Model negative = add_model(4, dir.path());
  negative->mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-5);
  write_file_atomic(dir / "n.onnx", serialize_model(*negative.proto));
  message = expect_error([&] { load_model(dir / "n.onnx"); });
  EXPECT_NE(message.find("negative dimension -5"), std::string::npos) << message;
  EXPECT_NE(message.find("'x'"), std::string::npos) << message;
}

// For display (`inspect model`): both models load as declared; reading the weight is what fails.
TEST(OnnxModel, DisplayLoadKeepsDeclaredDimsAndChecksDataWhenRead) {
  TempDir dir;
  Model model = add_model(4, dir.path());
  auto* w = model->mutable_graph()->mutable_initializer(0);
  w->clear_dims();
  for (int i = 0; i < 3; ++i) w->add_dims(1000000);
  auto* input_shape = model->mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  input_shape->mutable_dim(0)->set_dim_value(-5);
  write_file_atomic(dir / "m.onnx", serialize_model(*model.proto));
  LoadOptions display;
  display.check_dims_and_data = false;
  Model loaded = load_model(dir / "m.onnx", display);
  EXPECT_EQ(loaded->graph().input(0).type().tensor_type().shape().dim(0).dim_value(), -5);
  EXPECT_EQ(loaded->graph().initializer(0).dims_size(), 3);
  std::string message = expect_error([&] { tensor_from_proto(loaded->graph().initializer(0), loaded.base_dir); });
  EXPECT_NE(message.find("'w'"), std::string::npos) << message;
}

TEST_F(HostileExternalData, DisplayLoadStillRefusesPathsLeavingTheFolder) {
  Model model = add_model(4, dir_.path() / "model");
  point_external(model->mutable_graph()->mutable_initializer(0), "../outside.bin", "0", "16");
  fs::path file = dir_.path() / "model/m.onnx";
  write_file_atomic(file, serialize_model(*model.proto));
  LoadOptions display;
  display.check_dims_and_data = false;
  std::string message = expect_error([&] { load_model(file, display); });
  EXPECT_NE(message.find(".."), std::string::npos) << message;
}

TEST(TensorProtoDecoding, TypedFieldsMatchRawData) {
  auto roundtrip = [](const TensorProto& typed) {
    Tensor t = tensor_from_proto(typed, ".");
    TensorProto raw = tensor_to_proto(t, typed.name());
    Tensor again = tensor_from_proto(raw, ".");
    EXPECT_TRUE(identical(t, again)) << typed.name();
    return t;
  };
  TensorProto f;
  f.set_name("f");
  f.set_data_type(TensorProto::FLOAT);
  f.add_dims(3);
  for (float v : {1.5f, -2.0f, 3.25f}) f.add_float_data(v);
  EXPECT_EQ(roundtrip(f).data<float>()[2], 3.25f);

  TensorProto h;
  h.set_name("h");
  h.set_data_type(TensorProto::FLOAT16);
  h.add_dims(2);
  h.add_int32_data(float_to_float16_bits(0.5f));
  h.add_int32_data(float_to_float16_bits(-7.0f));
  EXPECT_EQ(float16_bits_to_float(roundtrip(h).data<uint16_t>()[1]), -7.0f);

  TensorProto b;
  b.set_name("b");
  b.set_data_type(TensorProto::BOOL);
  b.add_dims(3);
  for (int v : {1, 0, 5}) b.add_int32_data(v);
  Tensor bt = roundtrip(b);
  EXPECT_EQ(bt.data<uint8_t>()[2], 1);

  TensorProto i4;  // int4 packs two values per int32 entry (low nibble first)
  i4.set_name("i4");
  i4.set_data_type(TensorProto::INT4);
  i4.add_dims(3);
  i4.add_int32_data(0x2f);  // elements -1 (0xf), 2
  i4.add_int32_data(0x07);  // element 7
  Tensor i4t = roundtrip(i4);
  EXPECT_EQ(i4t.byte_size(), 2u);
  EXPECT_EQ(static_cast<const uint8_t*>(i4t.raw())[0], 0x2f);

  TensorProto u32;
  u32.set_name("u32");
  u32.set_data_type(TensorProto::UINT32);
  u32.add_dims(1);
  u32.add_uint64_data(4000000000u);
  EXPECT_EQ(roundtrip(u32).data<uint32_t>()[0], 4000000000u);

  TensorProto s;
  s.set_name("s");
  s.set_data_type(TensorProto::STRING);
  s.add_dims(2);
  s.add_string_data("alpha");
  s.add_string_data("");
  EXPECT_EQ(roundtrip(s).data<std::string>()[0], "alpha");

  TensorProto c;
  c.set_name("c");
  c.set_data_type(TensorProto::COMPLEX64);
  c.add_dims(1);
  c.add_float_data(1.0f);
  c.add_float_data(-1.0f);
  EXPECT_EQ(roundtrip(c).data<float>()[1], -1.0f);

  TensorProto wrong;
  wrong.set_name("wrong");
  wrong.set_data_type(TensorProto::FLOAT);
  wrong.add_dims(4);
  wrong.add_float_data(1.0f);
  EXPECT_NE(expect_error([&] { tensor_from_proto(wrong, "."); }).find("'wrong'"), std::string::npos);
}

TEST(OnnxModel, CheckerAndShapeInference) {
  TempDir dir;
  Model model = add_model(4, dir.path());
  EXPECT_NO_THROW(check_model(model));
  auto result = infer_shapes(*model.proto);
  EXPECT_TRUE(result.ok) << result.error;

  Model broken = add_model(4, dir.path());
  broken->mutable_graph()->mutable_node(0)->set_input(0, "does_not_exist");
  std::string message = expect_error([&] { check_model(broken); });
  EXPECT_NE(message.find("does_not_exist"), std::string::npos) << message;
}

TEST(OnnxModel, ShapeInferenceFillsIntermediateShapes) {
  Model model = load_model(kShared / "onnx-tests/node/test_conv_with_strides_padding/model.onnx");
  model->mutable_graph()->clear_value_info();
  model->mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  ASSERT_TRUE(infer_shapes(*model.proto).ok);
  auto outputs = graph_outputs(model->graph());
  ASSERT_EQ(outputs.size(), 1u);
  // Conv over 7x5 with 3x3 kernel, pads 1, strides 2 -> 4x3.
  EXPECT_EQ(outputs[0].second.to_string(), "[dtype=float32, shape=(1, 1, 4, 3)]");
}

// A model whose external data is larger than protobuf's 2 GB limit: loading validates it without
// reading it; saving elsewhere must keep the data external (a sparse file keeps this cheap).
TEST(OnnxModel, ModelsOverTwoGigabytesUseExternalData) {
  TempDir dir;
  const int64_t n = (int64_t{1} << 31) / 4 + 1024;  // just over 2 GiB of float32
  {
    std::ofstream big(dir / "big.bin", std::ios::binary);
  }
  fs::resize_file(dir / "big.bin", static_cast<uintmax_t>(n) * 4);
  Model model = add_model(4, dir.path());
  auto* w = model->mutable_graph()->mutable_initializer(0);
  w->set_dims(0, n);
  point_external(w, "big.bin");
  write_file_atomic(dir / "big.onnx", serialize_model(*model.proto));
  Model loaded = load_model(dir / "big.onnx");
  fs::create_directories(dir / "out");
  save_model(loaded, dir / "out/big.onnx");  // kAuto must choose external data
  Model again = load_model(dir / "out/big.onnx");
  ASSERT_TRUE(uses_external_data(again->graph().initializer(0)));
  EXPECT_EQ(fs::file_size(dir / "out/big.onnx.data"), static_cast<uintmax_t>(n) * 4);
  EXPECT_LT(fs::file_size(dir / "out/big.onnx"), 4096u);
  // And a model that must not be inlined refuses clearly when asked to.
  SaveOptions never;
  never.external_data = ExternalData::kNever;
  std::string message = expect_error([&] { save_model(loaded, dir / "out/inline.onnx", never); });
  EXPECT_NE(message.find("2 GB"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(dir / "out/inline.onnx"));
}

}  // namespace
}  // namespace parity::onnx
