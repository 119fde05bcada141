// The structured fuzzer's file targets: numpy arrays (.npy, .npz), Polygraphy JSON input files,
// RunResults, debug replays and the header of compiled OpenVINO model files.
#include <array>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fuzz_targets.h"
#include "parity/compare/run_results.h"
#include "parity/core/array_io.h"
#include "parity/core/file_io.h"
#include "parity/debug/replay.h"
#include "parity/runtime/openvino/openvino_compiled_file.h"

namespace parity::fuzz {
namespace {

namespace fs = std::filesystem;
using runtime::fnv1a64_hash;

fs::path write_case(const fs::path& scratch, const std::string& file_name, const std::string& bytes) {
  fs::path path = scratch / file_name;
  write_file_atomic(path, bytes);
  return path;
}

std::string shape_tuple(FuzzValues& values) {
  std::string tuple = "(";
  const uint64_t rank = values.below(5);
  for (uint64_t i = 0; i < rank; ++i) tuple += std::to_string(values.one_in(8) ? values.integer() : values.dim()) + ", ";
  if (rank == 1 && values.one_in(2)) tuple.pop_back();
  return tuple + ")";
}

uint32_t crc32(std::string_view bytes) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put16(std::string& out, uint64_t v) {
  for (int i = 0; i < 2; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put32(std::string& out, uint64_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// A zip archive of stored members; now and then a size, CRC or member count is wrong.
std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& members, FuzzValues& values) {
  std::string out, directory;
  for (const auto& [name, data] : members) {
    const uint32_t offset = static_cast<uint32_t>(out.size());
    uint64_t size = data.size();
    if (values.one_in(10)) size = values.pick<uint64_t>({0xffffffffu, 0x7fffffffu, size + 1, 0});
    const uint32_t crc = values.one_in(10) ? static_cast<uint32_t>(values.next()) : crc32(data);
    auto header = [&](std::string& to, bool central) {
      put32(to, central ? 0x02014b50 : 0x04034b50);
      if (central) put16(to, 20);
      put16(to, 20);
      put16(to, 0);
      put16(to, 0);  // stored
      put16(to, 0);
      put16(to, 0);
      put32(to, crc);
      put32(to, size);
      put32(to, size);
      put16(to, name.size());
      put16(to, 0);
      if (central) {
        put16(to, 0);
        put16(to, 0);
        put16(to, 0);
        put32(to, 0);
        put32(to, offset);
      }
      to += name;
    };
    header(out, false);
    out += data;
    header(directory, true);
  }
  const uint32_t directory_offset = static_cast<uint32_t>(out.size());
  out += directory;
  put32(out, 0x06054b50);
  put16(out, 0);
  put16(out, 0);
  const uint64_t count = values.one_in(10) ? 0xffff : members.size();
  put16(out, count);
  put16(out, count);
  put32(out, directory.size());
  put32(out, directory_offset);
  put16(out, 0);
  return out;
}

std::string npz_case(FuzzValues& values, const GenerationLimits&) {
  std::vector<std::pair<std::string, std::string>> members;
  const uint64_t count = values.below(4);
  for (uint64_t i = 0; i < count; ++i) {
    std::string name = values.one_in(3) ? values.name() : "a" + std::to_string(i);
    if (!values.one_in(6)) name += ".npy";
    members.emplace_back(name, npy_bytes(values));
  }
  if (values.one_in(4) && !members.empty()) members.push_back(members.front());  // a duplicate name
  return stored_zip(members, values);
}

void read_npy(const std::string& bytes, const fs::path&, const GenerationLimits&) { (void)decode_npy(bytes, "fuzz.npy"); }
void read_npz(const std::string& bytes, const fs::path& scratch, const GenerationLimits&) { (void)load_npz(write_case(scratch, "fuzz.npz", bytes)); }

nlohmann::json ndarray(FuzzValues& values) {
  std::string npy = npy_bytes(values);
  nlohmann::json array = {{"array", values.one_in(12) ? values.bytes(16) : base64_encode(npy)},
                          {"polygraphy_class", "ndarray"}};
  if (values.one_in(10)) array = {{"__polygraphy_encoded_ndarray", array["array"]}};
  if (values.one_in(12)) array["polygraphy_class"] = values.pick<std::string>({"LazyArray", "", "RunResults"});
  return array;
}

// JSON text with invalid UTF-8 allowed through (names are made by FuzzValues::name).
std::string dump(const nlohmann::json& json) { return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

std::string polygraphy_json_case(FuzzValues& values, const GenerationLimits& limits) {
  nlohmann::json iterations = nlohmann::json::array();
  const uint64_t count = values.below(3);
  for (uint64_t i = 0; i < count; ++i) {
    nlohmann::json feed = nlohmann::json::object();
    const uint64_t inputs = values.below(3);
    for (uint64_t k = 0; k < inputs; ++k) feed[values.name()] = ndarray(values);
    iterations.push_back(feed);
  }
  std::string text = dump(iterations);
  if (values.one_in(6)) text = nested_json(static_cast<int>(values.below(static_cast<uint64_t>(limits.max_json_depth))), text);
  return text;
}

void read_polygraphy_json(const std::string& bytes, const fs::path& scratch, const GenerationLimits&) {
  (void)load_inputs_json(write_case(scratch, "fuzz.json", bytes));
}

std::string run_results_case(FuzzValues& values, const GenerationLimits& limits) {
  nlohmann::json runners = nlohmann::json::array();
  const uint64_t count = values.below(3);
  for (uint64_t r = 0; r < count; ++r) {
    std::string runner = values.name();
    nlohmann::json iterations = nlohmann::json::array();
    const uint64_t iteration_count = values.below(3);
    for (uint64_t i = 0; i < iteration_count; ++i) {
      nlohmann::json outputs = nlohmann::json::object();
      const uint64_t output_count = values.below(3);
      for (uint64_t k = 0; k < output_count; ++k) {
        nlohmann::json array = ndarray(values);
        outputs[values.name()] =
            values.one_in(4) ? array : nlohmann::json{{"values", array}, {"polygraphy_class", "LazyArray"}};
      }
      nlohmann::json runtime = values.pick<int>({0, 1, 2, 3}) == 0 ? nlohmann::json(nullptr) : nlohmann::json(values.real());
      if (values.one_in(8)) runtime = values.integer();
      iterations.push_back({{"outputs", outputs},
                            {"runtime", runtime},
                            {"runner_name", values.one_in(6) ? values.name() : runner},
                            {"polygraphy_class", "IterationResult"}});
    }
    runners.push_back({runner, iterations});
  }
  std::string text = dump({{"lst", runners}, {"polygraphy_class", "RunResults"}});
  if (values.one_in(8)) text = nested_json(static_cast<int>(values.below(static_cast<uint64_t>(limits.max_json_depth))), text);
  return text;
}

void read_run_results(const std::string& bytes, const fs::path& scratch, const GenerationLimits&) {
  (void)compare::load_run_results(write_case(scratch, "fuzz.json", bytes));
}

std::string replay_case(FuzzValues& values, const GenerationLimits& limits) {
  nlohmann::json steps = nlohmann::json::array();
  const uint64_t count = values.below(5);
  for (uint64_t i = 0; i < count; ++i) {
    nlohmann::json step = {{"key", values.one_in(3) ? values.name() : "k" + std::to_string(values.below(3))},
                           {"failed", values.one_in(2)}};
    if (values.one_in(2)) step["exit_code"] = values.one_in(2) ? nlohmann::json(values.integer()) : nlohmann::json(values.real());
    if (values.one_in(3)) step["label"] = values.name();
    if (values.one_in(3)) step["hash"] = values.name();
    if (values.one_in(10)) step.erase(values.pick<std::string>({"key", "failed"}));
    if (values.one_in(10)) step["failed"] = values.integer();
    steps.push_back(step);
  }
  nlohmann::json replay = {{"tool", values.pick<std::string>({"reduce", "repeat", "build", ""})},
                           {"model_nodes", values.integer()},
                           {"steps", steps}};
  if (values.one_in(10)) replay.erase("steps");
  std::string text = dump(replay);
  if (values.one_in(8)) {
    const int depth = static_cast<int>(values.below(static_cast<uint64_t>(limits.max_json_depth)));
    text = "{\"tool\": \"reduce\", \"model_nodes\": 1, \"steps\": [{\"key\": \"k0\", \"failed\": true, \"label\": " +
           nested_json(depth, "0") + "}]}";
  }
  return text;
}

void read_replay(const std::string& bytes, const fs::path& scratch, const GenerationLimits&) {
  debug::DebugReplay replay(write_case(scratch, "replay.json", bytes), {}, {}, {"tool", "model_nodes"});
  for (const char* key : {"k0", "k1", "k2", "t0"}) (void)replay.find(key);
  (void)replay.loaded_field("model_nodes");
}

std::string dims_text(FuzzValues& values) {
  if (values.one_in(6)) return "-";
  std::string text;
  const uint64_t rank = 1 + values.below(4);
  for (uint64_t i = 0; i < rank; ++i) {
    if (i > 0) text += ",";
    switch (values.below(5)) {
      case 0: text += "?"; break;
      case 1: text += fmt::format("{}..{}", values.dim(), values.one_in(2) ? std::to_string(values.dim()) : ""); break;
      case 2: text += std::to_string(values.integer()); break;
      default: text += std::to_string(values.dim());
    }
  }
  if (values.one_in(20)) text += values.pick<std::string>({"99999999999999999999", ",", "..", "1e3", "0x10"});
  return text;
}

std::string ovc_case(FuzzValues& values, const GenerationLimits&) {
  std::string compiled = values.bytes(64);
  std::string header = fmt::format("PARITY-OPENVINO-COMPILED-MODEL {}\n", values.one_in(8) ? values.integer() : values.pick<int64_t>({2, 3}));
  header += "openvino-version 2025.3.0-19807-44526285f24-releases/2025/3\ndevice CPU\n";
  header += fmt::format("inference-precision {}\n", values.pick<std::string>({"f32", "bf16", "f16", ""}));
  header += fmt::format("source-model-hash {}\n", fnv1a64_hash(values.bytes(8)));
  for (const char* kind : {"input", "output"}) {
    const uint64_t count = values.one_in(20) ? 2000 : values.below(4);
    for (uint64_t i = 0; i < count; ++i) {
      std::string name = values.name();
      for (char& c : name)
        if (c == '\n') c = ' ';
      header += fmt::format("{} {} {} {}\n", kind, values.one_in(6) ? values.integer() : values.pick<int64_t>({1, 7, 10, 9}),
                            dims_text(values), name);
    }
  }
  if (values.one_in(3)) {
    std::string map = values.one_in(2) ? R"({"layers": [{"name": "a", "onnx_nodes": ["n"]}]})" : dump(values.name());
    header += fmt::format("onnx-map {}\nonnx-map-hash {}\n", map, values.one_in(8) ? "fnv1a64:0" : fnv1a64_hash(map));
  }
  int64_t size = static_cast<int64_t>(compiled.size());
  if (values.one_in(8)) size = values.integer();
  header += fmt::format("compiled-bytes {}\ncompiled-hash {}\n", size, fnv1a64_hash(compiled));
  if (!values.one_in(8)) header += fmt::format("header-hash {}\n", fnv1a64_hash(header));
  return header + "end\n" + compiled;
}

void read_ovc(const std::string& bytes, const fs::path& scratch, const GenerationLimits&) {
  (void)runtime::read_openvino_compiled_file(write_case(scratch, "fuzz.ovc", bytes));
}

}  // namespace

std::string npy_bytes(FuzzValues& values) {
  static const std::vector<std::string> kDescr = {"<f4", "<f8", "<f2", "<i8", "<i4", "|i1", "|u1", "|b1", ">f4", ">i8",
                                                  "<u8", "<c8", "<c16", "<U5", "|S3", "|O", "<V8", "<M8[s]", "bogus"};
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': {}, 'shape': {}, }}", values.pick(kDescr),
                                   values.one_in(4) ? "True" : "False", shape_tuple(values));
  const int version = values.one_in(10) ? static_cast<int>(values.below(256)) : 1 + static_cast<int>(values.below(3));
  const std::size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  uint64_t length = header.size();
  if (values.one_in(12)) length = values.next();
  if (version == 1) put16(out, length);
  else put32(out, length);
  out += header;
  // A few bytes of data, whatever the shape declares.
  out += values.bytes(values.one_in(2) ? 8 : 64);
  return out;
}

std::string nested_json(int depth, const std::string& inner) {
  std::string out;
  out.reserve(static_cast<std::size_t>(depth) * 7 + inner.size());
  for (int i = 0; i < depth; ++i) out += i % 2 == 0 ? "[" : "{\"a\":";
  out += inner;
  for (int i = depth - 1; i >= 0; --i) out += i % 2 == 0 ? "]" : "}";
  return out;
}

std::vector<FuzzTarget> file_targets() {
  return {{"npy", [](FuzzValues& values, const GenerationLimits&) { return npy_bytes(values); }, read_npy},
          {"npz", npz_case, read_npz},
          {"polygraphy-json", polygraphy_json_case, read_polygraphy_json},
          {"run-results", run_results_case, read_run_results},
          {"replay", replay_case, read_replay},
          {"ovc-header", ovc_case, read_ovc}};
}

}  // namespace parity::fuzz
