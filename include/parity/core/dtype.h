// Every ONNX tensor element type, with its size, names and ONNX enum value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace parity {

// Values equal ONNX's TensorProto::DataType.
enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
  kFloat8E4M3FN = 17,
  kFloat8E4M3FNUZ = 18,
  kFloat8E5M2 = 19,
  kFloat8E5M2FNUZ = 20,
  kUInt4 = 21,
  kInt4 = 22,
  kFloat4E2M1 = 23,
  kFloat8E8M0 = 24,
  kUInt2 = 25,
  kInt2 = 26,
  kFloat6E2M3 = 27,
  kFloat6E3M2 = 28,
};

enum class DTypeKind { kFloat, kSignedInt, kUnsignedInt, kBool, kString, kComplex, kUndefined };

struct DTypeInfo {
  DType dtype;
  std::string_view name;          // numpy / ml_dtypes name: "float32", "bfloat16", "float8_e4m3fn"
  std::string_view onnx_name;     // ONNX's enum name: "FLOAT", "BFLOAT16"
  int bits;                       // bits per element (4 for int4; 8*sizeof(std::string) never used)
  DTypeKind kind;
  std::string_view numpy_descr;   // '.npy' descr ("<f4", "|b1"); empty when numpy has no such type
};

// All defined types (kUndefined excluded), in ONNX enum order.
std::span<const DTypeInfo> all_dtypes();
const DTypeInfo& dtype_info(DType dtype);

inline std::string_view dtype_name(DType dtype) { return dtype_info(dtype).name; }
// Bits per element; sub-byte types (int4, uint4, float4, int2, uint2) are packed.
inline int dtype_bits(DType dtype) { return dtype_info(dtype).bits; }
bool is_floating(DType dtype);  // float kinds incl. float16/bfloat16/float8/float4/float6
bool is_integer(DType dtype);   // signed or unsigned ints incl. int4/int2
bool is_packed(DType dtype);    // fewer than 8 bits per element

// Bytes needed to store `count` elements (packed types round up). For kString this is the
// number of std::string objects times sizeof(std::string).
std::size_t storage_bytes(DType dtype, int64_t count);

// Conversions; each throws InvalidInputError naming the unknown value.
DType dtype_from_onnx(int32_t onnx_enum);
DType dtype_from_name(std::string_view name);  // accepts numpy names and ONNX enum names
std::optional<DType> dtype_from_numpy_descr(std::string_view descr);

}  // namespace parity
