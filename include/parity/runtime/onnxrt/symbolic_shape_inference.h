// Shape inference as Polygraphy's InferShapes loader does it: ONNX Runtime's symbolic shape
// inference (`onnxruntime.tools.symbolic_shape_infer`, which needs sympy) run in the Python that
// has the onnxruntime package, falling back to ONNX's own shape inference when that Python, its
// packages or the tool fail. Starts one Python process, at the first call, and keeps it for the
// process's other calls: only for the commands that ask.
#pragma once

#include <string>

#include "parity/onnx/model.h"

namespace parity::runtime {

// ONNX Runtime's symbolic shape inference on `model`, with Polygraphy's arguments
// (SymbolicShapeInference.infer_shapes(model, auto_merge=True); int_max, guess_output_rank and
// verbose at their defaults). The model is written to a temporary folder (its external data inline,
// or beside it past protobuf's 2 GB), the Python found as the ONNX Runtime backend finds it
// ($PARITY_PYTHON, else python3 on PATH, else the one scripts/setup.sh recorded; the first whose
// onnxruntime package has the library) runs the tool in a worker started at the first call and kept
// for the others (one interpreter start per command), and the result's value_info and graph
// input/output types (subgraphs included) replace `model`'s; the folder is removed in every case.
// Returns an empty string on success, else why it did not run; `model` is then untouched.
std::string infer_shapes_with_onnxruntime(onnx::Model& model);

// Polygraphy's InferShapes: with `allow_onnxruntime`, infer_shapes_with_onnxruntime, then (at -v,
// once per process) "Inferred shapes in the model with `onnxruntime.tools.symbolic_shape_infer`."; if
// that fails, Polygraphy's warning "Falling back to `onnx.shape_inference` ..." (once per process,
// the reason at --extra-verbose) and ONNX's shape inference, which also runs without
// `allow_onnxruntime`. The result is ONNX's (always ok after ONNX Runtime's inference).
onnx::ShapeInferenceResult infer_shapes(onnx::Model& model, bool allow_onnxruntime);

}  // namespace parity::runtime
