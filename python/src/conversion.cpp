#include "conversion.h"

#include <Python.h>

#include <bit>
#include <cstring>
#include <optional>
#include <unordered_map>

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include "parity/core/error.h"

namespace parity::python {

using namespace nb::literals;

void PythonObject::Release::operator()(nb::object* object) const {
  if (Py_IsInitialized() && PyGILState_Check()) {
    object->reset();  // this thread holds the GIL (also while the interpreter tears modules down)
  } else if (python_is_finalizing()) {
    object->release();  // another thread, and the interpreter is going away: leak the reference
  } else {
    nb::gil_scoped_acquire gil;
    object->reset();
  }
  delete object;
}

PythonObject::PythonObject(nb::object object) : holder_(new nb::object(std::move(object)), Release{}) {}

namespace {

// Keeps a Python buffer object alive for as long as a Tensor points into it.
class PythonStorage final : public Storage {
 public:
  PythonStorage(PythonObject owner, std::byte* data, std::size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}
  std::byte* data() override { return data_; }
  std::size_t size() const override { return size_; }

 private:
  PythonObject owner_;
  std::byte* data_;
  std::size_t size_;
};

nb::dlpack::dtype dlpack_dtype(DType dtype, bool& found) {
  found = true;
  using nb::dlpack::dtype_code;
  auto make = [](dtype_code code, int bits) {
    return nb::dlpack::dtype{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  };
  switch (dtype) {
    case DType::kBool: return make(dtype_code::Bool, 8);
    case DType::kInt8: return make(dtype_code::Int, 8);
    case DType::kInt16: return make(dtype_code::Int, 16);
    case DType::kInt32: return make(dtype_code::Int, 32);
    case DType::kInt64: return make(dtype_code::Int, 64);
    case DType::kUInt8: return make(dtype_code::UInt, 8);
    case DType::kUInt16: return make(dtype_code::UInt, 16);
    case DType::kUInt32: return make(dtype_code::UInt, 32);
    case DType::kUInt64: return make(dtype_code::UInt, 64);
    case DType::kFloat16: return make(dtype_code::Float, 16);
    case DType::kFloat32: return make(dtype_code::Float, 32);
    case DType::kFloat64: return make(dtype_code::Float, 64);
    case DType::kComplex64: return make(dtype_code::Complex, 64);
    case DType::kComplex128: return make(dtype_code::Complex, 128);
    default: found = false; return {};
  }
}

// numpy's dtype object for a type numpy has only through ml_dtypes (bfloat16, float8...).
nb::object numpy_dtype(DType dtype) {
  static std::unordered_map<int, nb::object>* cache = new std::unordered_map<int, nb::object>();  // never freed
  auto it = cache->find(static_cast<int>(dtype));
  if (it != cache->end()) return it->second;
  nb::object numpy = nb::module_::import_("numpy");
  std::string name(dtype_name(dtype));
  nb::object result;
  try {
    nb::object ml_dtypes = nb::module_::import_("ml_dtypes");
    result = numpy.attr("dtype")(ml_dtypes.attr(name.c_str()));
  } catch (nb::python_error&) {
    raise<UnsupportedError>("dtype {} has no numpy type (install ml_dtypes for it)", name);
  }
  cache->emplace(static_cast<int>(dtype), result);
  return result;
}

nb::tuple shape_tuple(const Shape& shape) {
  nb::list dims;
  for (int64_t d : shape) dims.append(d);
  return nb::tuple(dims);
}

}  // namespace

Tensor tensor_from_array(nb::handle array, const std::string& dtype_name_text, const std::string& what) {
  DType dtype = with_context(what, [&] { return dtype_from_name(dtype_name_text); });
  if (dtype == DType::kString) raise<UnsupportedError>("{}: string arrays cannot be fed from Python yet", what);
  if (is_packed(dtype)) raise<UnsupportedError>("{}: packed dtype {} cannot be fed from Python", what, dtype_name_text);
  auto view = nb::cast<nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>>(array);
  Shape shape;
  for (std::size_t i = 0; i < view.ndim(); ++i) shape.push_back(static_cast<int64_t>(view.shape(i)));
  std::size_t bytes = view.nbytes();
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  if (storage_bytes(dtype, count) != bytes)
    raise<InvalidInputError>("{}: {} bytes for {} elements of {}", what, bytes, count, dtype_name_text);
  auto* data = const_cast<std::byte*>(static_cast<const std::byte*>(view.data()));
  if (bytes == 0) return Tensor::zeros(dtype, shape);
  auto storage = std::make_shared<PythonStorage>(PythonObject(nb::borrow(array)), data, bytes);
  return Tensor::borrow(dtype, std::move(shape), std::move(storage));
}

nb::object array_from_tensor(const Tensor& tensor) {
  DType dtype = tensor.dtype();
  if (dtype == DType::kString) {
    nb::list values;
    for (const std::string& s : tensor.span<std::string>()) values.append(nb::str(s.data(), s.size()));
    nb::object numpy = nb::module_::import_("numpy");
    return numpy.attr("array")(values, "dtype"_a = numpy.attr("object_")).attr("reshape")(shape_tuple(tensor.shape()));
  }
  if (is_packed(dtype)) raise<UnsupportedError>("dtype {} (packed) has no numpy array form", dtype_name(dtype));
  std::vector<std::size_t> shape(tensor.shape().begin(), tensor.shape().end());
  bool standard = false;
  nb::dlpack::dtype code = dlpack_dtype(dtype, standard);
  if (tensor.size() == 0 || tensor.raw() == nullptr) {
    nb::object numpy = nb::module_::import_("numpy");
    nb::object numpy_type = standard ? numpy.attr("dtype")(nb::str(std::string(dtype_name(dtype)).c_str()))
                                     : numpy_dtype(dtype);
    return numpy.attr("zeros")(shape_tuple(tensor.shape()), numpy_type);
  }
  // The capsule owns a handle on the tensor's storage: the array keeps Parity's buffer alive.
  auto* owner = new Tensor(tensor);
  nb::capsule capsule(owner, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  if (standard) {
    nb::ndarray<nb::numpy> array(owner->mutable_raw(), shape.size(), shape.data(), capsule, nullptr, code);
    return nb::cast(array, nb::rv_policy::reference);
  }
  // ml_dtypes types: the bytes as unsigned integers of the same width, viewed as the real type.
  nb::dlpack::dtype raw{static_cast<uint8_t>(nb::dlpack::dtype_code::UInt), static_cast<uint8_t>(dtype_bits(dtype)), 1};
  nb::ndarray<nb::numpy> array(owner->mutable_raw(), shape.size(), shape.data(), capsule, nullptr, raw);
  return nb::cast(array, nb::rv_policy::reference).attr("view")(numpy_dtype(dtype));
}

NamedTensors feed_from_python(nb::handle items) {
  NamedTensors feed;
  for (nb::handle item : items) {
    auto entry = nb::cast<nb::tuple>(item);
    std::string name = nb::cast<std::string>(entry[0]);
    std::string dtype = nb::cast<std::string>(entry[2]);
    feed.emplace_back(name, tensor_from_array(entry[1], dtype, fmt::format("input '{}'", name)));
  }
  return feed;
}

namespace {

// The dtype of a buffer-protocol format string in native byte order ("f", "<f", "=q", "Zd"...);
// nullopt for anything else (big-endian, structured, ml_dtypes' types).
std::optional<DType> dtype_of_buffer_format(const char* format, Py_ssize_t itemsize) {
  if (format == nullptr) return DType::kUInt8;  // no format requested means unsigned bytes
  if (*format == '@' || *format == '=' || (*format == '<' && std::endian::native == std::endian::little)) ++format;
  bool complex = *format == 'Z';
  if (complex) ++format;
  if (format[0] == '\0' || format[1] != '\0') return std::nullopt;
  char code = format[0];
  if (complex) {
    if (code == 'f' && itemsize == 8) return DType::kComplex64;
    if (code == 'd' && itemsize == 16) return DType::kComplex128;
    return std::nullopt;
  }
  switch (code) {
    case '?': return DType::kBool;
    case 'e': return DType::kFloat16;
    case 'f': return DType::kFloat32;
    case 'd': return DType::kFloat64;
    case 'b': case 'h': case 'i': case 'l': case 'q':
      switch (itemsize) {
        case 1: return DType::kInt8;
        case 2: return DType::kInt16;
        case 4: return DType::kInt32;
        case 8: return DType::kInt64;
        default: return std::nullopt;
      }
    case 'B': case 'H': case 'I': case 'L': case 'Q':
      switch (itemsize) {
        case 1: return DType::kUInt8;
        case 2: return DType::kUInt16;
        case 4: return DType::kUInt32;
        case 8: return DType::kUInt64;
        default: return std::nullopt;
      }
    default: return std::nullopt;
  }
}

// numpy.ndarray (the type object; imported once, never freed).
PyTypeObject* numpy_array_type() {
  static PyTypeObject* type = [] {
    nb::object ndarray = nb::module_::import_("numpy").attr("ndarray");
    return reinterpret_cast<PyTypeObject*>(ndarray.release().ptr());
  }();
  return type;
}

// A numpy array (exactly numpy.ndarray) borrowed through the buffer protocol when it is C-contiguous
// and of a native-endian standard dtype; nullopt when it needs parity._feeds.as_native_array.
std::optional<Tensor> tensor_from_plain_array(nb::handle value) {
  if (Py_TYPE(value.ptr()) != numpy_array_type()) return std::nullopt;
  Py_buffer view;
  if (PyObject_GetBuffer(value.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();  // not contiguous, or a dtype the buffer protocol cannot describe
    return std::nullopt;
  }
  std::optional<DType> dtype = dtype_of_buffer_format(view.format, view.itemsize);
  Shape shape(view.shape, view.shape + view.ndim);
  auto* data = static_cast<std::byte*>(view.buf);
  auto bytes = static_cast<std::size_t>(view.len);
  PyBuffer_Release(&view);  // the array object, held by the storage, keeps its memory
  if (!dtype) return std::nullopt;
  if (bytes == 0) return Tensor::zeros(*dtype, shape);
  auto storage = std::make_shared<PythonStorage>(PythonObject(nb::borrow(value)), data, bytes);
  return Tensor::borrow(*dtype, std::move(shape), std::move(storage));
}

}  // namespace

NamedTensors feed_from_dict(nb::handle mapping, const char* kind) {
  if (!PyDict_Check(mapping.ptr()))  // other mappings, and the error for non-mappings, in Python
    return feed_from_python(nb::module_::import_("parity._feeds").attr("native_items")(mapping, kind));
  NamedTensors feed;
  feed.reserve(static_cast<std::size_t>(PyDict_Size(mapping.ptr())));
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t position = 0;
  while (PyDict_Next(mapping.ptr(), &position, &key, &value)) {
    if (!PyUnicode_Check(key))
      raise<InvalidInputError>("{} names must be strings, got {}", kind, nb::cast<std::string>(nb::repr(key)));
    Py_ssize_t length = 0;
    const char* text = PyUnicode_AsUTF8AndSize(key, &length);
    if (text == nullptr) throw nb::python_error();
    std::string name(text, static_cast<std::size_t>(length));
    if (std::optional<Tensor> tensor = tensor_from_plain_array(value)) {
      feed.emplace_back(std::move(name), std::move(*tensor));
      continue;
    }
    std::string what = fmt::format("{} '{}'", kind, name);
    nb::object converted = nb::module_::import_("parity._feeds").attr("as_native_array")(nb::handle(value), what);
    auto pair = nb::cast<nb::tuple>(converted);
    feed.emplace_back(std::move(name), tensor_from_array(pair[0], nb::cast<std::string>(pair[1]), what));
  }
  return feed;
}

nb::dict dict_from_tensors(const NamedTensors& tensors) {
  nb::dict result;
  for (const auto& [name, tensor] : tensors) result[nb::str(name.data(), name.size())] = array_from_tensor(tensor);
  return result;
}

namespace {

nb::object dims_to_python(const std::vector<Dim>& dims, int which) {
  nb::list list;
  bool any = false;
  for (const Dim& dim : dims) {
    if (which == 0) {
      if (dim.value) list.append(*dim.value);
      else if (!dim.symbol.empty()) list.append(nb::str(dim.symbol.c_str()));
      else list.append(nb::none());
    } else {
      const std::optional<int64_t>& bound = which == 1 ? dim.min : dim.max;
      if (bound) any = true;
      if (bound) list.append(*bound);
      else if (dim.value) list.append(*dim.value);
      else list.append(nb::none());
    }
  }
  if (which != 0 && !any) return nb::none();
  return list;
}

}  // namespace

nb::list metadata_to_python(const TensorMetadata& metadata) {
  nb::list result;
  for (const auto& [name, info] : metadata) {
    nb::object dtype = nb::none();
    if (info.dtype != DType::kUndefined) dtype = nb::str(std::string(dtype_name(info.dtype)).c_str());
    nb::object shape = nb::none(), min_shape = nb::none(), max_shape = nb::none();
    if (info.shape) {
      shape = dims_to_python(*info.shape, 0);
      min_shape = dims_to_python(*info.shape, 1);
      max_shape = dims_to_python(*info.shape, 2);
    }
    result.append(nb::make_tuple(nb::str(name.c_str()), dtype, shape, min_shape, max_shape));
  }
  return result;
}

TensorMetadata metadata_from_python(nb::handle entries) {
  TensorMetadata metadata;
  for (nb::handle item : entries) {
    auto entry = nb::cast<nb::tuple>(item);
    std::string name = nb::cast<std::string>(entry[0]);
    DType dtype = entry[1].is_none() ? DType::kUndefined : dtype_from_name(nb::cast<std::string>(entry[1]));
    std::optional<std::vector<Dim>> dims;
    if (!entry[2].is_none()) {
      dims.emplace();
      auto shape = nb::cast<nb::list>(entry[2]);
      std::optional<nb::list> min_shape, max_shape;
      if (entry.size() > 3 && !entry[3].is_none()) min_shape = nb::cast<nb::list>(entry[3]);
      if (entry.size() > 4 && !entry[4].is_none()) max_shape = nb::cast<nb::list>(entry[4]);
      for (std::size_t i = 0; i < shape.size(); ++i) {
        nb::handle d = shape[i];
        Dim dim;
        if (nb::isinstance<nb::int_>(d) && nb::cast<int64_t>(d) >= 0) dim = Dim::fixed(nb::cast<int64_t>(d));
        else if (nb::isinstance<nb::str>(d)) dim = Dim::named(nb::cast<std::string>(d));
        if (min_shape && i < min_shape->size() && !(*min_shape)[i].is_none())
          dim.min = nb::cast<int64_t>((*min_shape)[i]);
        if (max_shape && i < max_shape->size() && !(*max_shape)[i].is_none())
          dim.max = nb::cast<int64_t>((*max_shape)[i]);
        dims->push_back(dim);
      }
    }
    metadata.add(name, dtype, dims);
  }
  return metadata;
}

}  // namespace parity::python
