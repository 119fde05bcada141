// Conversions between Python objects and Parity's C++ types for the bindings: numpy arrays and
// Tensors (zero-copy both ways), feeds, tensor metadata, and a holder that keeps a Python object
// alive from C++ code that may run without the GIL.
#pragma once

#include <memory>
#include <string>

#include <nanobind/nanobind.h>

#include "parity/core/array_io.h"
#include "parity/core/tensor_metadata.h"

namespace parity::python {

namespace nb = nanobind;

// True once the interpreter is shutting down (no GIL can be taken then).
inline bool python_is_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return !Py_IsInitialized() || Py_IsFinalizing();
#else
  return !Py_IsInitialized() || _Py_IsFinalizing();
#endif
}

// A reference to a Python object that may be copied and destroyed by C++ code holding no GIL
// (std::function captures, Storage released on a worker thread): the last owner takes the GIL to
// drop the reference (and leaks it once the interpreter is finalizing).
class PythonObject {
 public:
  PythonObject() = default;
  explicit PythonObject(nb::object object);
  // Only with the GIL held.
  nb::handle get() const { return holder_ ? nb::handle(*holder_) : nb::handle(); }
  explicit operator bool() const { return holder_ != nullptr; }

 private:
  struct Release {
    void operator()(nb::object* object) const;
  };
  std::shared_ptr<nb::object> holder_;
};

// A numpy array's memory as a Tensor, without copying. `array` must be a C-contiguous numpy array
// in native byte order (the Python layer normalizes feeds with parity._feeds.as_native_array);
// `dtype_name` is the numpy dtype's name (for ml_dtypes types, which reach C++ viewed as unsigned
// integers of the same width). The array is kept alive by the Tensor's storage.
Tensor tensor_from_array(nb::handle array, const std::string& dtype_name, const std::string& what);
// A Tensor as a numpy array sharing its memory (the array owns a reference to the storage); string
// tensors become object arrays (copied). Packed types (int4...) raise UnsupportedError.
nb::object array_from_tensor(const Tensor& tensor);

// [(name, array, dtype_name), ...] -> NamedTensors (zero-copy).
NamedTensors feed_from_python(nb::handle items);
// A feed dict {name: array} -> NamedTensors (zero-copy), `kind` ("input"/"output") naming its
// entries in errors. C-contiguous native-endian numpy arrays of the dtypes the buffer protocol
// describes are read here; anything else (torch tensors, ml_dtypes types, non-contiguous or
// byte-swapped arrays, lists) goes through parity._feeds.as_native_array, which copies or refuses.
NamedTensors feed_from_dict(nb::handle mapping, const char* kind);
// NamedTensors -> {name: array} (a dict, insertion-ordered).
nb::dict dict_from_tensors(const NamedTensors& tensors);

// The contents of a Python bytes object.
inline std::string bytes_of(nb::handle bytes) {
  nb::bytes b = nb::borrow<nb::bytes>(bytes);
  return std::string(b.c_str(), b.size());
}

// TensorMetadata <-> [(name, dtype_name or None, shape or None, min_shape or None, max_shape or None)]
// where a shape is a list of int (fixed), str (named dim) or None (unknown).
nb::list metadata_to_python(const TensorMetadata& metadata);
TensorMetadata metadata_from_python(nb::handle entries);

}  // namespace parity::python
