// The parts of the extension module parity._parity, each binding one layer of the C++ library.
#pragma once

#include <string>
#include <thread>

#include <nanobind/nanobind.h>

#include "parity/runtime/loader.h"
#include "parity/runtime/runner.h"

namespace parity::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_logger(nb::module_& m);
void bind_onnx(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_compare(nb::module_& m);
void bind_dataset(nb::module_& m);
void bind_quantize(nb::module_& m);

// A runner written in Python (any object with activate/deactivate/get_input_metadata/infer) as a
// C++ runner named `name`-N<k>-<time>; the caller owns it.
runtime::Runner* python_runner_adapter(nb::object runner, const std::string& name);

// A model given from Python: a path, a (path, external data folder) pair, the serialized bytes, or
// a callable returning a path or bytes (called with the GIL at every load). ONNX ModelProtos and
// Parity's loaders are reduced to these forms by parity/_models.py before they get here.
runtime::ModelLoader model_loader_from(nb::object source);

// While alive on Python's main thread, Ctrl-C (SIGINT) requests an interrupt (parity/core/interrupt.h)
// as well as calling Python's own handler, so an inference or a comparison run with the GIL
// released stops: the reference interpreter before its next node, ONNX Runtime between kernels,
// OpenVINO's request cancelled. Elsewhere, or where SIGINT is not a plain handler, it does nothing.
class SigintInterruptsInference {
 public:
  SigintInterruptsInference();
  ~SigintInterruptsInference();
  SigintInterruptsInference(const SigintInterruptsInference&) = delete;
  SigintInterruptsInference& operator=(const SigintInterruptsInference&) = delete;

 private:
  bool installed_ = false;
};

// Each backend's runner classes (parity._parity.<Name>Runner and what they take), one function per
// backend of the registry (parity/runtime/backend_registry.h), called by bind_runtime.
void bind_ref_runner(nb::module_& m);
void bind_onnxrt_runner(nb::module_& m);
void bind_openvino_runner(nb::module_& m);
void bind_torch_runner(nb::module_& m);

}  // namespace parity::python
