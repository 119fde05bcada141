// PyTorch's CPU generator replayed. See torch_random_generator.h.
#include "parity/runtime/torch_random_generator.h"

#include "parity/core/error.h"
#include "parity/core/half.h"

namespace parity::runtime {

TorchRandomGenerator::TorchRandomGenerator(uint64_t seed) : engine_(static_cast<uint32_t>(seed & 0xffffffffu)) {}

uint32_t TorchRandomGenerator::random() { return static_cast<uint32_t>(engine_()); }

uint64_t TorchRandomGenerator::random64() {
  const uint64_t high = random();
  const uint64_t low = random();
  return (high << 32) | low;
}

void TorchRandomGenerator::rand(Tensor& tensor) {
  const int64_t n = tensor.size();
  auto next_float = [&] { return static_cast<float>(random() & ((1u << 24) - 1)) * 0x1p-24f; };
  switch (tensor.dtype()) {
    case DType::kFloat32: {
      float* out = tensor.mutable_data<float>();
      for (int64_t i = 0; i < n; ++i) out[i] = next_float();
      break;
    }
    case DType::kFloat64: {
      double* out = tensor.mutable_data<double>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<double>(random64() & ((uint64_t{1} << 53) - 1)) * 0x1p-53;
      break;
    }
    case DType::kFloat16: {
      uint16_t* out = tensor.mutable_data<uint16_t>();
      constexpr uint16_t kOne = 0x3c00;  // torch turns a value that rounds up to 1 into 0
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t bits = float_to_float16_bits(next_float());
        out[i] = bits == kOne ? 0 : bits;
      }
      break;
    }
    case DType::kBFloat16: {
      uint16_t* out = tensor.mutable_data<uint16_t>();
      constexpr uint16_t kOne = 0x3f80;
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t bits = float_to_bfloat16_bits(next_float());
        out[i] = bits == kOne ? 0 : bits;
      }
      break;
    }
    default:
      raise<InternalError>("TorchRandomGenerator::rand: unexpected dtype {}", dtype_name(tensor.dtype()));
  }
}

void TorchRandomGenerator::randint(Tensor& tensor, int64_t low, int64_t high_exclusive) {
  const uint64_t range = static_cast<uint64_t>(high_exclusive) - static_cast<uint64_t>(low);
  const bool wide = range >= (uint64_t{1} << 28);
  auto next = [&]() -> int64_t {
    const uint64_t draw = wide ? random64() : random();
    return static_cast<int64_t>(draw % range + static_cast<uint64_t>(low));
  };
  const int64_t n = tensor.size();
  auto fill = [&]<typename T>(T*) {
    T* out = tensor.mutable_data<T>();
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(next());
  };
  switch (tensor.dtype()) {
    case DType::kBool: {
      bool* out = tensor.mutable_data<bool>();
      for (int64_t i = 0; i < n; ++i) out[i] = next() != 0;
      break;
    }
    case DType::kInt8: fill(static_cast<int8_t*>(nullptr)); break;
    case DType::kInt16: fill(static_cast<int16_t*>(nullptr)); break;
    case DType::kInt32: fill(static_cast<int32_t*>(nullptr)); break;
    case DType::kInt64: fill(static_cast<int64_t*>(nullptr)); break;
    case DType::kUInt8: fill(static_cast<uint8_t*>(nullptr)); break;
    case DType::kUInt16: fill(static_cast<uint16_t*>(nullptr)); break;
    case DType::kUInt32: fill(static_cast<uint32_t*>(nullptr)); break;
    case DType::kUInt64: fill(static_cast<uint64_t*>(nullptr)); break;
    default:
      raise<InternalError>("TorchRandomGenerator::randint: unexpected dtype {}", dtype_name(tensor.dtype()));
  }
}

}  // namespace parity::runtime
