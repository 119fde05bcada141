#include "args/int8_exclude_args.h"

#include "parity/core/error.h"

namespace parity::cli {

void Int8ExcludeArgs::add_to(CLI::App& app) {
  app.add_option("--save-ort-nodes-to-exclude", ort_path_,
                 "With --int8: save the nodes to leave unquantized (those found and those --keep-fp32 keeps) as a "
                 "JSON array of node names, ONNX Runtime's quantize_static(..., nodes_to_exclude=json.load(FILE))")
      ->group("Output");
  app.add_option("--save-modelopt-nodes-to-exclude", modelopt_path_,
                 "With --int8: save the same nodes as a JSON array of ^NAME$ patterns (names escaped for Python's re), "
                 "NVIDIA ModelOpt's ONNX quantize(..., nodes_to_exclude=json.load(FILE))")
      ->group("Output");
}

void Int8ExcludeArgs::parse(bool int8) const {
  if (int8) return;
  if (!ort_path_.empty() || !modelopt_path_.empty())
    raise<InvalidInputError>("--save-ort-nodes-to-exclude and --save-modelopt-nodes-to-exclude list quantized nodes: "
                             "they need --int8");
}

}  // namespace parity::cli
