#include "element_types.h"

#include <array>
#include <utility>

namespace parity::runtime::openvino {
namespace {

// ONNX TensorProto.DataType values.
constexpr std::array<std::pair<int32_t, ov::element::Type_t>, 18> kPairs{{
    {1, ov::element::Type_t::f32},      {2, ov::element::Type_t::u8},       {3, ov::element::Type_t::i8},
    {4, ov::element::Type_t::u16},      {5, ov::element::Type_t::i16},      {6, ov::element::Type_t::i32},
    {7, ov::element::Type_t::i64},       {9, ov::element::Type_t::boolean},
    {10, ov::element::Type_t::f16},     {11, ov::element::Type_t::f64},     {12, ov::element::Type_t::u32},
    {13, ov::element::Type_t::u64},     {16, ov::element::Type_t::bf16},    {17, ov::element::Type_t::f8e4m3},
    {19, ov::element::Type_t::f8e5m2},  {21, ov::element::Type_t::u4},      {22, ov::element::Type_t::i4},
    {23, ov::element::Type_t::f4e2m1},
}};

}  // namespace

std::optional<int32_t> onnx_element_type(const ov::element::Type& type) {
  for (const auto& [onnx, openvino] : kPairs)
    if (ov::element::Type(openvino) == type) return onnx;
  return std::nullopt;
}

ov::element::Type openvino_element_type(int32_t onnx_type) {
  for (const auto& [onnx, openvino] : kPairs)
    if (onnx == onnx_type) return openvino;
  return ov::element::dynamic;
}

}  // namespace parity::runtime::openvino
