#include "parity/core/dtype.h"

#include <array>
#include <string>

#include "parity/core/error.h"

namespace parity {
namespace {

using K = DTypeKind;
constexpr int kStringBits = 8 * static_cast<int>(sizeof(std::string));

// Indexed by ONNX enum value - 1.
constexpr std::array<DTypeInfo, 28> kTable{{
    {DType::kFloat32, "float32", "FLOAT", 32, K::kFloat, "<f4"},
    {DType::kUInt8, "uint8", "UINT8", 8, K::kUnsignedInt, "|u1"},
    {DType::kInt8, "int8", "INT8", 8, K::kSignedInt, "|i1"},
    {DType::kUInt16, "uint16", "UINT16", 16, K::kUnsignedInt, "<u2"},
    {DType::kInt16, "int16", "INT16", 16, K::kSignedInt, "<i2"},
    {DType::kInt32, "int32", "INT32", 32, K::kSignedInt, "<i4"},
    {DType::kInt64, "int64", "INT64", 64, K::kSignedInt, "<i8"},
    {DType::kString, "string", "STRING", kStringBits, K::kString, ""},
    {DType::kBool, "bool", "BOOL", 8, K::kBool, "|b1"},
    {DType::kFloat16, "float16", "FLOAT16", 16, K::kFloat, "<f2"},
    {DType::kFloat64, "float64", "DOUBLE", 64, K::kFloat, "<f8"},
    {DType::kUInt32, "uint32", "UINT32", 32, K::kUnsignedInt, "<u4"},
    {DType::kUInt64, "uint64", "UINT64", 64, K::kUnsignedInt, "<u8"},
    {DType::kComplex64, "complex64", "COMPLEX64", 64, K::kComplex, "<c8"},
    {DType::kComplex128, "complex128", "COMPLEX128", 128, K::kComplex, "<c16"},
    {DType::kBFloat16, "bfloat16", "BFLOAT16", 16, K::kFloat, ""},
    {DType::kFloat8E4M3FN, "float8_e4m3fn", "FLOAT8E4M3FN", 8, K::kFloat, ""},
    {DType::kFloat8E4M3FNUZ, "float8_e4m3fnuz", "FLOAT8E4M3FNUZ", 8, K::kFloat, ""},
    {DType::kFloat8E5M2, "float8_e5m2", "FLOAT8E5M2", 8, K::kFloat, ""},
    {DType::kFloat8E5M2FNUZ, "float8_e5m2fnuz", "FLOAT8E5M2FNUZ", 8, K::kFloat, ""},
    {DType::kUInt4, "uint4", "UINT4", 4, K::kUnsignedInt, ""},
    {DType::kInt4, "int4", "INT4", 4, K::kSignedInt, ""},
    {DType::kFloat4E2M1, "float4_e2m1fn", "FLOAT4E2M1", 4, K::kFloat, ""},
    {DType::kFloat8E8M0, "float8_e8m0fnu", "FLOAT8E8M0", 8, K::kFloat, ""},
    {DType::kUInt2, "uint2", "UINT2", 2, K::kUnsignedInt, ""},
    {DType::kInt2, "int2", "INT2", 2, K::kSignedInt, ""},
    {DType::kFloat6E2M3, "float6_e2m3fn", "FLOAT6E2M3", 6, K::kFloat, ""},
    {DType::kFloat6E3M2, "float6_e3m2fn", "FLOAT6E3M2", 6, K::kFloat, ""},
}};

constexpr DTypeInfo kUndefinedInfo{DType::kUndefined, "undefined", "UNDEFINED", 0, K::kUndefined, ""};

}  // namespace

std::span<const DTypeInfo> all_dtypes() { return kTable; }

const DTypeInfo& dtype_info(DType dtype) {
  auto index = static_cast<int32_t>(dtype);
  if (index >= 1 && index <= static_cast<int32_t>(kTable.size())) return kTable[index - 1];
  if (index == 0) return kUndefinedInfo;
  raise<InternalError>("invalid DType value {}", index);
}

bool is_floating(DType dtype) { return dtype_info(dtype).kind == K::kFloat; }
bool is_integer(DType dtype) {
  auto kind = dtype_info(dtype).kind;
  return kind == K::kSignedInt || kind == K::kUnsignedInt;
}
bool is_packed(DType dtype) { return dtype_info(dtype).bits < 8; }

std::size_t storage_bytes(DType dtype, int64_t count) {
  if (dtype == DType::kString) return static_cast<std::size_t>(count) * sizeof(std::string);
  auto bits = static_cast<unsigned __int128>(dtype_info(dtype).bits) * static_cast<uint64_t>(count);
  return static_cast<std::size_t>((bits + 7) / 8);
}

DType dtype_from_onnx(int32_t onnx_enum) {
  if (onnx_enum >= 1 && onnx_enum <= static_cast<int32_t>(kTable.size()))
    return kTable[onnx_enum - 1].dtype;
  if (onnx_enum == 0) raise<InvalidInputError>("element type is UNDEFINED (0)");
  raise<InvalidInputError>("unknown ONNX element type {} (known: 1..{})", onnx_enum, kTable.size());
}

DType dtype_from_name(std::string_view name) {
  for (const auto& info : kTable)
    if (info.name == name || info.onnx_name == name) return info.dtype;
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  if (name == "half") return DType::kFloat16;
  raise<InvalidInputError>("unknown data type '{}'", name);
}

std::optional<DType> dtype_from_numpy_descr(std::string_view descr) {
  if (descr.size() < 2) return std::nullopt;
  char order = descr[0];
  std::string_view rest = descr.substr(1);
  bool single_byte = rest == "u1" || rest == "i1" || rest == "b1";
  if (order != '<' && order != '|' && order != '=' && !(order == '>' && !single_byte)) {
    if (order != '>') return std::nullopt;
  }
  for (const auto& info : kTable)
    if (!info.numpy_descr.empty() && info.numpy_descr.substr(1) == rest) return info.dtype;
  return std::nullopt;
}

}  // namespace parity
