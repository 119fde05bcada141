// ai.onnx.ml elementwise ops: Binarizer, Scaler, Imputer, Normalizer.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "parity/ops/broadcast.h"
#include "parity/ops/dispatch.h"

namespace parity::ops {
namespace {

using MlNumeric = TypeList<float, double, int64_t, int32_t>;

void binarizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double threshold = ctx.attr_float("threshold");
  dispatch<MlNumeric>(x.dtype(), ctx, [&]<typename T>() {
    unary_elementwise<T, T>(ctx, 0, x, [&](T v) { return static_cast<double>(v) > threshold ? T(1) : T(0); });
  });
}

// Y = (X - offset) * scale, offset/scale of length 1 or the last dimension; float output.
void scaler(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<float> offset = ctx.attr_floats("offset", std::vector<float>{0.0f});
  std::vector<float> scale = ctx.attr_floats("scale", std::vector<float>{1.0f});
  if (offset.empty()) offset = {0.0f};
  if (scale.empty()) scale = {1.0f};
  const int64_t c = x.rank() == 0 ? 1 : x.shape().back();
  auto ok = [&](std::size_t n) { return n == 1 || static_cast<int64_t>(n) == c; };
  if (!ok(offset.size()) || !ok(scale.size()))
    ctx.fail("offset ({}) and scale ({}) must have 1 or {} values", offset.size(), scale.size(), c);
  dispatch<MlNumeric>(x.dtype(), ctx, [&]<typename T>() {
    Tensor& out = ctx.allocate_output(0, DType::kFloat32, x.shape());
    const T* px = x.data<T>();
    float* po = out.mutable_data<float>();
    for (int64_t i = 0; i < x.size(); ++i) {
      const std::size_t j = static_cast<std::size_t>(c == 0 ? 0 : i % c);
      const float o = offset[offset.size() == 1 ? 0 : j], s = scale[scale.size() == 1 ? 0 : j];
      po[i] = (static_cast<float>(px[i]) - o) * s;
    }
  });
}

void imputer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t c = x.rank() == 0 ? 1 : x.shape().back();
  const bool floats = x.dtype() == DType::kFloat32 || x.dtype() == DType::kFloat64;
  std::vector<double> values;
  if (floats) {
    for (float v : ctx.attr_floats("imputed_value_floats", std::vector<float>{})) values.push_back(v);
  } else {
    for (int64_t v : ctx.attr_ints("imputed_value_int64s", std::vector<int64_t>{}))
      values.push_back(static_cast<double>(v));
  }
  if (values.empty()) ctx.fail("the imputed_value_* attribute matching the input type is required");
  if (values.size() != 1 && static_cast<int64_t>(values.size()) != c)
    ctx.fail("imputed values must have 1 or {} entries, found {}", c, values.size());
  const double replaced = floats ? static_cast<double>(ctx.attr_float("replaced_value_float"))
                                 : static_cast<double>(ctx.attr_int("replaced_value_int64"));
  dispatch<MlNumeric>(x.dtype(), ctx, [&]<typename T>() {
    Tensor& out = ctx.allocate_output(0, x.dtype(), x.shape());
    const T* px = x.data<T>();
    T* po = out.mutable_data<T>();
    for (int64_t i = 0; i < x.size(); ++i) {
      const double v = static_cast<double>(px[i]);
      const bool hit = std::isnan(replaced) ? std::isnan(v) : v == replaced;
      po[i] = hit ? static_cast<T>(values[values.size() == 1 ? 0 : static_cast<std::size_t>(i % c)]) : px[i];
    }
  });
}

void normalizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("X must be [N, C] or [C], found shape {}", shape_to_string(x.shape()));
  const std::string norm = ctx.attr_string("norm");
  if (norm != "MAX" && norm != "L1" && norm != "L2") ctx.fail("norm must be MAX, L1 or L2, found '{}'", norm);
  const int64_t c = x.shape().back();
  const int64_t rows = x.rank() == 2 ? x.shape()[0] : 1;
  dispatch<MlNumeric>(x.dtype(), ctx, [&]<typename T>() {
    Tensor& out = ctx.allocate_output(0, DType::kFloat32, x.shape());
    const T* px = x.data<T>();
    float* po = out.mutable_data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      // MAX divides by the (signed) largest value, as the spec's formula max(x_i) and
      // onnxruntime do; a zero divisor leaves the row unchanged.
      double d = norm == "MAX" ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t j = 0; j < c; ++j) {
        const double v = static_cast<double>(px[r * c + j]);
        if (norm == "MAX") d = std::max(d, v);
        else if (norm == "L1") d += std::abs(v);
        else d += v * v;
      }
      if (norm == "L2") d = std::sqrt(d);
      if (d == 0.0 || c == 0) d = 1.0;
      for (int64_t j = 0; j < c; ++j) po[r * c + j] = static_cast<float>(static_cast<double>(px[r * c + j]) / d);
    }
  });
}

}  // namespace

PARITY_KERNEL("ai.onnx.ml", "Binarizer", 1, binarizer);
PARITY_KERNEL("ai.onnx.ml", "Scaler", 1, scaler);
PARITY_KERNEL("ai.onnx.ml", "Imputer", 1, imputer);
PARITY_KERNEL("ai.onnx.ml", "Normalizer", 1, normalizer);

}  // namespace parity::ops
