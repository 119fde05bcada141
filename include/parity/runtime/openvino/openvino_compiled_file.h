// Compiled OpenVINO model files (`parity convert model.onnx --openvino -o model.ovc`): OpenVINO's
// exported compiled model (ov::CompiledModel::export_model) framed by a header of Parity's own, so
// that `parity run model.ovc --openvino` needs no ONNX file and a foreign, truncated or corrupt
// file is refused with one clear error before OpenVINO reads a byte of it.
//
// Layout: a text header of "key value" lines, then the exported bytes.
//   PARITY-OPENVINO-COMPILED-MODEL <format version>    (the magic, first line)
//   openvino-version <OpenVINO's build number>
//   device CPU
//   inference-precision bf16
//   source-model-hash fnv1a64:<16 hex digits>            (the ONNX file's bytes, not its external data)
//   input <ONNX element type> <dims> <name>               (one line per input, in order)
//   output <ONNX element type> <dims> <name>              (one line per output, in order)
//   onnx-map <JSON, one line>                             (optional: the layers' ONNX nodes, below)
//   onnx-map-hash fnv1a64:<16 hex digits>                 (with onnx-map: its JSON text)
//   compiled-bytes <n>
//   compiled-hash fnv1a64:<16 hex digits>                 (the exported bytes)
//   header-hash fnv1a64:<16 hex digits>                   (every header byte before this line)
//   end
// <dims>: comma-separated, each a size, "min..max" (bounded dynamic), "min.." (bounded below), "?"
// (dynamic, no bounds) or "-" for a scalar. Names run to the end of the line (a name with a line
// break cannot be written).
// onnx-map: which ONNX nodes each executed layer covers, as `convert` mapped them from the ONNX
// model (EngineReport::onnx_map_text), so that `inspect model model.ovc` shows them without it.
// Format version 1 had no onnx-map; such files are still read (the ONNX nodes are then not known).
// Format versions 1 and 2 had no header-hash; such files are still read, and the OpenVINO runner
// checks their inputs against the compiled model's when it imports one (it does for every version).
// The hashes are FNV-1a 64 (no cryptographic strength: they detect corruption and edits, not
// deliberate tampering).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "parity/core/tensor_metadata.h"

namespace parity::runtime {

inline constexpr int kOpenvinoCompiledFormatVersion = 3;

struct OpenvinoCompiledFile {
  std::string openvino_version;     // the OpenVINO build that compiled it
  std::string device = "CPU";
  std::string inference_precision;  // "f32", "bf16", "f16"
  std::string source_model_hash;    // "fnv1a64:<hex>"
  TensorMetadata inputs, outputs;   // dynamic dims carry their bounds (Dim::min/max)
  std::string onnx_map;             // EngineReport::onnx_map_text of the ONNX model; empty: not known
  std::string compiled;             // ov::CompiledModel::export_model's bytes
};

// FNV-1a 64 of `bytes`, as "fnv1a64:<16 lowercase hex digits>".
std::string fnv1a64_hash(std::string_view bytes);

// True when `path` starts with the header's magic line (false for unreadable files).
bool is_openvino_compiled_file(const std::filesystem::path& path);

// Writes atomically (temp file + rename). FileError when a name cannot be written or the write fails.
void write_openvino_compiled_file(const std::filesystem::path& path, const OpenvinoCompiledFile& file);

// Reads and checks the header (its hash from format version 3 on) and the compiled bytes' length
// and hash. FileError naming the path: not a compiled model file, another format version, a
// damaged or edited header, truncated, corrupt. The
// OpenVINO version is not checked here (the runner compares it with the library it loaded).
OpenvinoCompiledFile read_openvino_compiled_file(const std::filesystem::path& path);

}  // namespace parity::runtime
