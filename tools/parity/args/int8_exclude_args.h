// `debug precision --int8`'s outputs for other quantizers: the nodes to leave unquantized as ONNX
// Runtime's quantize_static nodes_to_exclude (--save-ort-nodes-to-exclude) and as NVIDIA ModelOpt's
// ONNX quantizer's nodes_to_exclude patterns (--save-modelopt-nodes-to-exclude), JSON arrays
// (parity/debug/int8_candidate.h).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace parity::cli {

class Int8ExcludeArgs {
 public:
  void add_to(CLI::App& app);
  // Refuses the flags without --int8 (`int8`: whether it was given).
  void parse(bool int8) const;
  const std::string& ort_path() const { return ort_path_; }
  const std::string& modelopt_path() const { return modelopt_path_; }

 private:
  std::string ort_path_, modelopt_path_;
};

}  // namespace parity::cli
