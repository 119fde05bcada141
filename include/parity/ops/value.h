// What flows along a graph edge: a tensor, a sequence of tensors, or an optional (empty, or
// holding a tensor or a sequence).
#pragma once

#include <memory>
#include <vector>

#include "parity/core/tensor.h"

namespace parity::ops {

class Value {
 public:
  enum class Kind { kNone, kTensor, kSequence, kOptional };

  Value() = default;
  static Value of(Tensor tensor) {
    Value v;
    v.kind_ = Kind::kTensor;
    v.tensor_ = std::move(tensor);
    return v;
  }
  // elem_dtype matters for empty sequences (it is the sequence's element type).
  static Value sequence(std::vector<Tensor> items, DType elem_dtype) {
    Value v;
    v.kind_ = Kind::kSequence;
    v.sequence_ = std::move(items);
    v.elem_dtype_ = elem_dtype;
    return v;
  }
  static Value optional(std::shared_ptr<const Value> inner) {  // nullptr: an empty optional
    Value v;
    v.kind_ = Kind::kOptional;
    v.inner_ = std::move(inner);
    return v;
  }

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_sequence() const { return kind_ == Kind::kSequence; }
  bool is_optional() const { return kind_ == Kind::kOptional; }
  bool is_none() const { return kind_ == Kind::kNone; }

  const Tensor& tensor() const;                  // throws InvalidInputError when not a tensor
  const std::vector<Tensor>& sequence() const;   // throws when not a sequence
  DType sequence_dtype() const { return elem_dtype_; }
  const Value* optional_value() const { return inner_.get(); }  // nullptr when empty
  const char* kind_name() const;

 private:
  Kind kind_ = Kind::kNone;
  Tensor tensor_;
  std::vector<Tensor> sequence_;
  DType elem_dtype_ = DType::kUndefined;
  std::shared_ptr<const Value> inner_;
};

}  // namespace parity::ops
