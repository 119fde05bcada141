// parity._parity: the extension module under the `parity` Python package (python/parity). The
// package's pure-Python modules give it Polygraphy's names; this module is its C++ half.
#include "bindings.h"

NB_MODULE(_parity, m) {
  m.doc() = "Parity's C++ library for the parity Python package (use the parity.* modules)";
  // Runners keep the Python loaders they were given (callables, often closures over the module
  // that holds the runner): a cycle through C++ that the garbage collector cannot see, which
  // nanobind would report at exit as leaked instances although nothing outlives the process.
  nanobind::set_leak_warnings(false);
  parity::python::bind_errors(m);
  parity::python::bind_logger(m);
  parity::python::bind_onnx(m);
  parity::python::bind_runtime(m);
  parity::python::bind_compare(m);
  parity::python::bind_dataset(m);
}
