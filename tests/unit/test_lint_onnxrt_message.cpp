// check lint's ONNX Runtime messages: the text of an ONNX Runtime status recovered from Parity's
// error, and pruned as Polygraphy prunes ONNX Runtime's Python exceptions.
#include <gtest/gtest.h>

#include "../../src/runtime/passes/lint_onnxrt.h"
#include "parity/core/error.h"
#include "parity/runtime/onnxrt/onnxrt_runner.h"

namespace parity {
namespace {

using runtime::detail::polygraphy_onnxrt_message;

TEST(LintOnnxrtMessage, StatusTextIsRecoveredFromParitysError) {
  InvalidInputError error("ONNX Runtime error while creating the session: [FAIL] Node (m) Op (MatMul) bad");
  error.add_context("model.onnx");
  EXPECT_EQ(runtime::onnxrt_error_message(error), "Node (m) Op (MatMul) bad");
  EXPECT_EQ(runtime::onnxrt_error_message(Error("something else: [FAIL] text")), std::nullopt);
}

TEST(LintOnnxrtMessage, ShapeInferencePrefixIsPruned) {
  EXPECT_EQ(polygraphy_onnxrt_message(
                "Node (MatMul_0) Op (MatMul) [ShapeInferenceError] Incompatible dimensions for matrix multiplication"),
            " Incompatible dimensions for matrix multiplication");
}

TEST(LintOnnxrtMessage, FillerSeparatorsAndQuotesArePruned) {
  EXPECT_EQ(polygraphy_onnxrt_message("This is an invalid model. Error: a \"quoted\" : name\nnext"),
            "a `quoted`namenext");
  EXPECT_EQ(polygraphy_onnxrt_message("Fatal error: ai.onnx.contrib:NegPos(-1) is not a registered function/op"),
            "Fatal error: ai.onnx.contrib:NegPos(-1) is not a registered function/op");
}

TEST(LintOnnxrtMessage, RunTimeStatusMessageIsPruned) {
  EXPECT_EQ(polygraphy_onnxrt_message("Non-zero status code returned while running Add node. Name:'Add_0' Status "
                                      "Message: /src/onnxruntime/core/providers/cpu/math/element_wise_ops.h:560 "
                                      "void onnxruntime::BroadcastIterator::Append(ptrdiff_t, ptrdiff_t) "
                                      "axis == 1 || axis == largest was false. Attempting to broadcast"),
            "/src/onnxruntime/core/providers/cpu/math/element_wise_ops.h:560 void "
            "onnxruntime::BroadcastIterator::Append(ptrdiff_t, ptrdiff_t) axis == 1 || axis == largest was false. "
            "Attempting to broadcast");
  EXPECT_EQ(polygraphy_onnxrt_message("/src/graph.cc:12 onnxruntime::Graph::Resolve(x) broken"), " broken");
}

}  // namespace
}  // namespace parity
