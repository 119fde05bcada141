// Weight stripping and reconstruction in Polygraphy's (and TensorRT's) format: a stripped
// initializer keeps its name, dtype and dims but no data, and its doc_string reads
// "TRT_WEIGHTLESS/" or, for a weight that followed 2:4 structured sparsity, "TRT_WEIGHTLESS/SPARSE_2_4";
// the model's doc_string gains "TRT_WEIGHTLESS" (joined to what was there with '-'). Files
// stripped by Polygraphy reconstruct here and the other way round.
//
// Which initializers are stripped (Polygraphy's patterns over the main graph, no threshold unless
// said): every initializer input of Conv, ConvTranspose, Gemm (non-empty ones) and MatMul; of
// Gather, and Slice's data input, with at least 1024 elements; the data input of a
// QuantizeLinear whose output goes only to a DequantizeLinear whose output goes only to one of
// Conv/ConvTranspose (input 0), Gemm (inputs 0-2) or MatMul (inputs 0-1); the input of a
// Transpose whose output goes only to one of those; every initializer input of a node whose op is
// not an ONNX op (a plugin). uint8 initializers and the excluded names are never stripped.
#pragma once

#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "parity/onnx/model.h"

namespace parity::onnx {

struct WeightStripReport {
  std::vector<std::string> stripped;            // in initializer order
  std::set<std::string> exclusions_not_found;  // excluded names no candidate input carried
};

// Initializers the patterns above select (before exclusions' effect on the count), in no order.
std::set<std::string> weights_to_strip(const ::onnx::GraphProto& graph, const std::set<std::string>& exclude,
                                       std::set<std::string>* exclusions_found = nullptr);

// Strips the selected initializers in place (all their data: raw, typed fields, external
// references), marking them as above; checks 2:4 sparsity first (logging as `inspect sparsity`).
WeightStripReport strip_weights(Model& model, const std::set<std::string>& exclude);

// Whether the initializer carries Polygraphy's weightless mark.
bool is_weightless(const ::onnx::TensorProto& tensor);

// Gives every weightless initializer random standard-normal values of its dtype and dims
// (cast as numpy's astype casts), then prunes those marked SPARSE_2_4 to 2:4 sparsity; the marks
// are removed. InvalidInputError for a mark not of the form "TRT_WEIGHTLESS/<flag>", or a marked
// initializer that still carries raw or external data. The model may be loaded with
// LoadOptions::check_dims_and_data off (stripped tensors have no data): the unmarked initializers
// are checked here. Returns how many were reconstructed.
int64_t reconstruct_weights(Model& model, std::mt19937_64& random);

}  // namespace parity::onnx
