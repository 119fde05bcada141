#include "parity/ops/value.h"

#include "parity/core/error.h"

namespace parity::ops {

const Tensor& Value::tensor() const {
  if (kind_ != Kind::kTensor) raise<InvalidInputError>("expected a tensor, found a {}", kind_name());
  return tensor_;
}

const std::vector<Tensor>& Value::sequence() const {
  if (kind_ != Kind::kSequence) raise<InvalidInputError>("expected a sequence, found a {}", kind_name());
  return sequence_;
}

const char* Value::kind_name() const {
  switch (kind_) {
    case Kind::kTensor: return "tensor";
    case Kind::kSequence: return "sequence";
    case Kind::kOptional: return "optional";
    default: return "missing value";
  }
}

}  // namespace parity::ops
