// A float32 ONNX model made int8 in one call: plan which nodes are quantized, take the activation
// scales from a TensorRT calibration cache or calibrate (then write the cache), insert the Q/DQ
// nodes. `parity convert --int8`, `parity run --int8` and the Python API's QuantizeOnnx use it.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "parity/core/array_io.h"
#include "parity/core/feed_stream.h"
#include "parity/core/tensor_metadata.h"
#include "parity/onnx/model.h"
#include "parity/quantize/calibration_algorithm.h"
#include "parity/quantize/qdq_insertion.h"
#include "parity/runtime/runner.h"

namespace parity::quantize {

struct QuantizeOptions {
  CalibrationSettings settings;
  std::vector<std::string> keep_fp32;  // PrecisionKeepList entries (--keep-fp32)
  // A TensorRT calibration cache: read when the file exists (no calibration), else written after
  // calibrating. Empty: calibrate, write nothing.
  std::filesystem::path cache;
};

// Makes a runner that calibrates, on the (prepared, still float) model, running each inference on
// `intra_op_threads` threads (0: the backend's default).
using CalibrationRunnerFactory =
    std::function<std::unique_ptr<runtime::Runner>(const onnx::Model&, int intra_op_threads)>;
// The calibration batches, from the model's input metadata (called only when calibrating), taken one
// at a time as the calibration runs them.
using CalibrationBatches = FeedStreamFunc;

struct QuantizeReport {
  QuantizationPlan plan;
  QdqReport qdq;
  bool calibrated = false;  // false: the scales came from the cache
  std::map<std::string, float> scales;  // the activation scales inserted (tensor -> scale)
};

// Quantizes `model` in place.
QuantizeReport quantize_model(onnx::Model& model, const QuantizeOptions& options,
                              const CalibrationRunnerFactory& make_runner, const CalibrationBatches& batches);

}  // namespace parity::quantize
