// Parsing of the flags that mark tensors as outputs (--onnx-outputs, --ov-outputs): "mark all",
// names, or @file (one name a line, '#' comments).
#pragma once

#include <string>
#include <vector>

#include "parity/runtime/runner.h"

namespace parity::cli {

runtime::IntermediateOutputs parse_output_marks(const std::vector<std::string>& args, const std::string& flag);

}  // namespace parity::cli
