// Type mapping between Parity and ONNX Runtime, and OrtValue <-> Tensor without copies: inputs
// are OrtValues over the Tensor's bytes, outputs are Tensors over the OrtValue's bytes (kept alive
// by the Tensor). String tensors are the exception: ONNX Runtime stores them its own way, so they
// are copied both ways. Private to the onnxrt backend.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "ort_library.h"
#include "parity/core/tensor.h"
#include "parity/core/tensor_metadata.h"

namespace parity::runtime::onnxrt {

// ONNX Runtime's element type enum has ONNX's TensorProto values, so the mapping is by value; this
// checks the value is one ONNX Runtime's headers or later versions know (up to 2-bit ints).
ONNXTensorElementDataType to_ort_type(DType dtype);
DType from_ort_type(ONNXTensorElementDataType type);

// One OrtValue, released when the last owner (a Value holder, or a Tensor borrowing its bytes)
// goes away. An input value may borrow a Tensor's bytes; it then keeps that Tensor alive. A Value
// is also the Storage of the Tensors made from it (one allocation per output).
class Value : public Storage {
 public:
  Value(LibraryPtr library, OrtValue* value, Tensor borrowed = {})
      : library_(std::move(library)), value_(value), borrowed_(std::move(borrowed)) {}
  ~Value() override;
  Value(const Value&) = delete;
  Value& operator=(const Value&) = delete;

  OrtValue* get() const { return value_; }
  const Library& library() const { return *library_; }
  // Storage: the tensor bytes (set by tensor_from_value).
  std::byte* data() override { return data_; }
  std::size_t size() const override { return size_; }

 private:
  friend std::optional<Tensor> tensor_from_value(const std::shared_ptr<Value>& value);
  LibraryPtr library_;
  OrtValue* value_;
  Tensor borrowed_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};
using ValuePtr = std::shared_ptr<Value>;

// A new OrtValue over `tensor`'s bytes (string tensors: a copy); the caller releases it and keeps
// `tensor` alive meanwhile.
OrtValue* make_input_value(const Library& library, const Tensor& tensor);

// An OrtValue over `tensor`'s bytes (string tensors: a copy).
ValuePtr value_from_tensor(const LibraryPtr& library, const Tensor& tensor);

// A Tensor over `value`'s bytes (strings: a copy), or nullopt when the value is not a tensor
// (a sequence or a map) or is an empty optional.
std::optional<Tensor> tensor_from_value(const ValuePtr& value);

// ONNX Runtime may hand a graph input straight back as an output (a graph output that is an input)
// without copying; such an output would point into the caller's tensor. Returns `output`, deep
// copied when its bytes lie inside one of `inputs`.
Tensor detach_from_inputs(Tensor output, const std::vector<const Tensor*>& inputs);

}  // namespace parity::runtime::onnxrt
