// The parts of the extension module parity._parity, each binding one layer of the C++ library.
#pragma once

#include <string>

#include <nanobind/nanobind.h>

#include "parity/runtime/runner.h"

namespace parity::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);
void bind_logger(nb::module_& m);
void bind_onnx(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_compare(nb::module_& m);

// A runner written in Python (any object with activate/deactivate/get_input_metadata/infer) as a
// C++ runner named `name`-N<k>-<time>; the caller owns it.
runtime::Runner* python_runner_adapter(nb::object runner, const std::string& name);

}  // namespace parity::python
