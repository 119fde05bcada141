// OpenVINO element types <-> ONNX element types (Parity's DType values). Private to the module.
#pragma once

#include <cstdint>
#include <optional>

#include <openvino/core/type/element_type.hpp>

namespace parity::runtime::openvino {

// nullopt for types ONNX has no equivalent of (and for OpenVINO's dynamic/undefined).
std::optional<int32_t> onnx_element_type(const ov::element::Type& type);
// ov::element::dynamic for ONNX types OpenVINO has no equivalent of.
ov::element::Type openvino_element_type(int32_t onnx_type);

}  // namespace parity::runtime::openvino
