// The structured fuzzer's targets: for each reader of files Parity accepts, a generator of valid
// (or nearly valid) inputs carrying extreme values, and the call that reads one. A case is the
// bytes of one file, so the cases kept in tests/fuzz/corpus replay without the generator.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "fuzz_values.h"

namespace parity::fuzz {

// Bounds on what the generators make, from the known findings (tests/fuzz/known_findings.txt):
// a finding another change is fixing is avoided rather than hit on every run.
struct GenerationLimits {
  int max_json_depth = 1 << 20;
  // Models holding one of these ops skip ONNX's shape inference (the interpreter still runs them).
  std::set<std::string> no_shape_inference_ops;
};

struct FuzzTarget {
  std::string name;
  std::string (*generate)(FuzzValues& values, const GenerationLimits& limits);
  // Reads `bytes` as this target's file (written under `scratch` where the reader takes a path).
  // Returns normally or throws; which exceptions are findings is the driver's decision.
  void (*run)(const std::string& bytes, const std::filesystem::path& scratch, const GenerationLimits& limits);
};

// npy, npz, polygraphy-json, run-results, replay, ovc-header (fuzz_file_targets.cpp).
std::vector<FuzzTarget> file_targets();
// onnx-model: one op of every kernel, attributes and inputs from ONNX's schema, through the
// loader, ONNX's checker and shape inference, and the reference interpreter (fuzz_model_target.cpp).
std::vector<FuzzTarget> model_targets();

// A .npy file: a header with extreme shapes, types and versions, and a few bytes of data.
std::string npy_bytes(FuzzValues& values);
// JSON nested `depth` levels deep (arrays and objects alternating) around `inner`.
std::string nested_json(int depth, const std::string& inner);

}  // namespace parity::fuzz
