// Error attribution by PyTorch module, when the runner under test is a PyTorch runner (`--torch`
// with --torch-dtype, --torch-dtype-mode autocast, --torch-compile, --torch-tf32): for each module
// paired with a compared tensor (onnx/torch_module_pairing.h, or by qualified name without an ONNX
// model), the LOCAL error: the module run alone in the configuration of the runner under test
// (TorchRunner::run_module), fed the reference's values of its positional arguments, each attributed
// submodule it calls returning the reference's output instead of computing its own, against the
// reference's output of the module; and the INHERITED error: its arguments in the run under test
// against the reference's. amplification = total error / inherited error, as for nodes (attribution.h).
//
// The reference's values: a PyTorch reference is run again with forward pre-hooks and hooks
// (TorchRunner::capture_module_calls); an ONNX reference is run again with every tensor kept, and a
// module's argument is that run's value only where its pairing is known: the argument is a model
// input, or the output (the same tensor, unchanged) of a module paired with an ONNX tensor. A module
// whose arguments cannot be captured (keyword or non-tensor arguments, called more than once, hooks
// that did not run) or paired is listed as not attributed, with why. The reference's values wait in a
// TensorSpill (in memory up to the budget, the rest in a temporary file) and are read per module.
#pragma once

#include "parity/compare/attribution.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/torch/torch_runner.h"

namespace parity::compare {

// Attributes the compared tensors of `totals` (iteration 0 of the layerwise comparison on `feed`) to
// the modules of `under_test` whose outputs they are. Throws InvalidInputError when no module output
// was compared, or `totals` has no `simple` metrics.
AttributionResult attribute_modules(runtime::Runner& reference, runtime::TorchRunner& under_test,
                                    const NamedTensors& feed, const LayerwiseResult& totals,
                                    const AttributionOptions& options);

// Module attribution when `under_test` is a PyTorch runner, else node attribution (attribute()) on
// the ONNX model `model` loads; InvalidInputError when node attribution has no ONNX model.
AttributionResult attribute_run(runtime::ModelLoader model, runtime::Runner& reference, runtime::Runner& under_test,
                                const NamedTensors& feed, const LayerwiseResult& totals,
                                const AttributionOptions& options);

}  // namespace parity::compare
