// Tests for Polygraphy's JSON encoding of arrays and its inputs files (a list of feed dicts).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_array_io_helpers.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/tensor.h"
#include "parity/core/file_io.h"

namespace parity {
namespace {

using namespace array_io_testing;

// ---------------------------------------------------------------------------------------------
// Polygraphy JSON

TEST(PolygraphyJsonTest, EncodesArrayThenClassMarker) {
  Tensor t = sample_tensor(DType::kFloat32, {2, 2});
  nlohmann::json j = encode_polygraphy_array(t);
  std::string text = j.dump();
  EXPECT_EQ(text.rfind("{\"array\":\"", 0), 0u) << text;
  EXPECT_NE(text.find("\",\"polygraphy_class\":\"ndarray\"}"), std::string::npos) << text;
  EXPECT_EQ(base64_decode(j["array"].get<std::string>(), "t"), encode_npy(t));
  EXPECT_TRUE(identical(decode_polygraphy_array(j, "t"), t));
}

TEST(PolygraphyJsonTest, DecodesLegacyLayouts) {
  Tensor t = sample_tensor(DType::kInt32, {3});
  std::string npy = encode_npy(t);
  nlohmann::json legacy = {{"__polygraphy_encoded_ndarray", "polygraphy_serialized_json_type"},
                           {"array", base64_encode(npy)}};
  EXPECT_TRUE(identical(decode_polygraphy_array(legacy, "legacy"), t));
  // Oldest: the bytes as a latin-1 string.
  std::string latin1_as_utf8;
  for (unsigned char c : npy) {
    if (c < 0x80) {
      latin1_as_utf8.push_back(static_cast<char>(c));
    } else {
      latin1_as_utf8.push_back(static_cast<char>(0xC0 | (c >> 6)));
      latin1_as_utf8.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  nlohmann::json latin1 = {{"polygraphy_class", "ndarray"}, {"array", latin1_as_utf8}};
  EXPECT_TRUE(identical(decode_polygraphy_array(latin1, "latin1"), t));
  // An .npz payload: the first array counts.
  TempDir dir{"parity-array-io"};
  save_npz(dir / "p.npz", {{"first", t}, {"second", sample_tensor(DType::kFloat32, {1})}});
  nlohmann::json npz = {{"polygraphy_class", "ndarray"}, {"array", base64_encode(read_bytes(dir / "p.npz"))}};
  EXPECT_TRUE(identical(decode_polygraphy_array(npz, "npz"), t));
}

TEST(PolygraphyJsonTest, RejectsBadObjectsNamingTheSource) {
  const std::string what = "input 'x'";
  std::string b64 = base64_encode(encode_npy(sample_tensor(DType::kFloat32, {1})));
  std::vector<std::pair<nlohmann::json, std::string>> invalid = {
      {nlohmann::json::array({1, 2}), "array"},
      {nlohmann::json{{"array", b64}}, "polygraphy_class"},
      {nlohmann::json{{"array", b64}, {"polygraphy_class", 3}}, "string"},
      {nlohmann::json{{"polygraphy_class", "ndarray"}}, "\"array\""},
      {nlohmann::json{{"polygraphy_class", "ndarray"}, {"array", 5}}, "base64"},
      {nlohmann::json{{"polygraphy_class", "ndarray"}, {"array", b64.substr(1)}}, "base64"},
      {nlohmann::json{{"polygraphy_class", "ndarray"}, {"array", base64_encode("not npy")}}, ".npy"},
      {nlohmann::json{{"__polygraphy_encoded_ndarray", "wrong"}, {"array", b64}}, "polygraphy_class"},
  };
  for (const auto& [object, needle] : invalid)
    expect_error<InvalidInputError>([&] { decode_polygraphy_array(object, what); }, {what, needle}, object.dump());
  // A torch tensor's payload must be torch.save's archive (tests/cli/test_torch_tensors_in_json.py
  // reads real ones), and a class Parity does not know is named.
  expect_error<InvalidInputError>(
      [&] { decode_polygraphy_array(nlohmann::json{{"polygraphy_class", "Tensor"}, {"tensor", b64}}, what); },
      {what, "not a valid torch.save (zip) archive"}, "torch tensor holding .npy bytes");
  expect_error<InvalidInputError>(
      [&] { decode_polygraphy_array(nlohmann::json{{"polygraphy_class", "Tensor"}, {"array", b64}}, what); },
      {what, "\"tensor\""}, "torch tensor without its key");
  expect_error<UnsupportedError>(
      [&] { decode_polygraphy_array(nlohmann::json{{"polygraphy_class", "DataFrame"}, {"array", b64}}, what); },
      {what, "'DataFrame'"}, "unknown class");
}

std::vector<NamedTensors> sample_iterations() {
  return {{{"z_input", sample_tensor(DType::kFloat32, {1, 3})},
           {"a_input", sample_tensor(DType::kInt64, {2})},
           {"m\xc3\xa4sk \"q\"\t\\", sample_tensor(DType::kBool, {2, 2})}},
          {},
          {{"z_input", sample_tensor(DType::kFloat32, {2, 3})}, {"text", sample_tensor(DType::kString, {3})}}};
}

TEST(PolygraphyJsonTest, InputsFilesRoundTripInOrder) {
  TempDir dir{"parity-array-io"};
  std::vector<NamedTensors> iterations = sample_iterations();
  save_inputs_json(dir / "inputs.json", iterations);
  std::vector<NamedTensors> back = load_inputs_json(dir / "inputs.json");
  ASSERT_EQ(back.size(), iterations.size());
  for (std::size_t i = 0; i < back.size(); ++i)
    expect_same_arrays(back[i], iterations[i], "iteration " + std::to_string(i));

  // The text is what nlohmann's ordered dump with 4-space indent gives (Python's layout).
  nlohmann::ordered_json expected = nlohmann::ordered_json::array();
  for (const auto& inputs : iterations) {
    nlohmann::ordered_json object = nlohmann::ordered_json::object();
    for (const auto& [name, tensor] : inputs) {
      nlohmann::ordered_json array = nlohmann::ordered_json::object();
      array["array"] = base64_encode(encode_npy(tensor));
      array["polygraphy_class"] = "ndarray";
      object[name] = array;
    }
    expected.push_back(object);
  }
  EXPECT_EQ(read_bytes(dir / "inputs.json"), expected.dump(4, ' ', true));

  save_inputs_json(dir / "none.json", {});
  EXPECT_EQ(read_bytes(dir / "none.json"), "[]");
  EXPECT_TRUE(load_inputs_json(dir / "none.json").empty());
}

TEST(PolygraphyJsonTest, InputsFileErrorsNameTheFileAndInput) {
  TempDir dir{"parity-array-io"};
  std::string good = base64_encode(encode_npy(sample_tensor(DType::kFloat32, {1})));
  struct Case {
    std::string label, text;
    std::vector<std::string> needles;
  };
  std::vector<Case> cases = {
      {"not json", "[{\"x\": ", {"not valid JSON"}},
      {"not a list", "{\"x\": 1}", {"list"}},
      {"iteration not object", "[[1]]", {"iteration 0"}},
      {"bad array", "[{\"ok\": {\"array\": \"" + good + "\", \"polygraphy_class\": \"ndarray\"}}, "
                    "{\"bad_input\": {\"array\": \"!!!!\", \"polygraphy_class\": \"ndarray\"}}]",
       {"iteration 1", "'bad_input'", "base64"}},
      {"plain number", "[{\"n\": 3}]", {"'n'"}},
      {"invalid utf-8", "[{\"\xff\": 3}]", {"not valid JSON"}},
  };
  for (const auto& c : cases) {
    fs::path path = dir / "bad.json";
    write_bytes(path, c.text);
    std::vector<std::string> needles = c.needles;
    needles.push_back(path.string());
    expect_error<InvalidInputError>([&] { load_inputs_json(path); }, needles, c.label);
  }
  expect_error<FileError>([&] { load_inputs_json(dir / "missing.json"); }, {"missing.json"}, "missing");

  // Saving something numpy cannot hold fails without leaving a file behind.
  std::vector<NamedTensors> bad = {{{"fine", sample_tensor(DType::kFloat32, {1})}},
                                   {{"brain", Tensor::zeros(DType::kBFloat16, {2})}}};
  expect_error<UnsupportedError>([&] { save_inputs_json(dir / "out.json", bad); }, {"bfloat16", "'brain'"},
                                 "bfloat16 input");
  std::vector<NamedTensors> dup = {
      {{"d", sample_tensor(DType::kFloat32, {1})}, {"d", sample_tensor(DType::kFloat32, {1})}}};
  expect_error<InvalidInputError>([&] { save_inputs_json(dir / "out.json", dup); }, {"'d'", "twice"}, "duplicate");
  std::vector<NamedTensors> utf = {{{"bad\xff", sample_tensor(DType::kFloat32, {1})}}};
  expect_error<InvalidInputError>([&] { save_inputs_json(dir / "out.json", utf); }, {"UTF-8"}, "bad name");
  EXPECT_FALSE(fs::exists(dir / "out.json"));
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().string().find("parity-tmp"), std::string::npos) << entry.path();
}

}  // namespace
}  // namespace parity
