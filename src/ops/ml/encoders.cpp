// ai.onnx.ml OneHotEncoder and FeatureVectorizer.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "parity/ops/dispatch.h"
#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

void one_hot_encoder(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool zeros = ctx.attr_int("zeros") != 0;
  std::unordered_map<std::string, int64_t> by_string;
  std::unordered_map<int64_t, int64_t> by_int;
  int64_t width = 0;
  if (x.dtype() == DType::kString) {
    for (const std::string& s : ctx.attr_strings("cats_strings")) by_string.emplace(s, width++);
  } else {
    for (int64_t v : ctx.attr_ints("cats_int64s", std::vector<int64_t>{})) by_int.emplace(v, width++);
  }
  if (width == 0) ctx.fail("the cats_* attribute matching the input type is required");
  Shape shape = x.shape();
  shape.push_back(width);
  Tensor& out = ctx.allocate_output(0, DType::kFloat32, shape);
  float* po = out.mutable_data<float>();
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t j = -1;
    if (x.dtype() == DType::kString) {
      auto it = by_string.find(x.data<std::string>()[i]);
      if (it != by_string.end()) j = it->second;
    } else {
      int64_t v = dispatch<TypeList<int64_t, int32_t, float, double>>(
          x.dtype(), ctx, [&]<typename T>() { return static_cast<int64_t>(x.data<T>()[i]); });
      auto it = by_int.find(v);
      if (it != by_int.end()) j = it->second;
    }
    if (j >= 0) po[i * width + j] = 1.0f;
    else if (!zeros) ctx.fail("element {} is not one of the categories (zeros=0)", i);
  }
}

void feature_vectorizer(KernelContext& ctx) {
  std::vector<int64_t> dims = ctx.attr_ints("inputdimensions");
  if (dims.size() != ctx.num_inputs())
    ctx.fail("inputdimensions has {} entries for {} inputs", dims.size(), ctx.num_inputs());
  int64_t total = 0, rows = -1;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const Tensor& t = ctx.input(k);
    if (t.rank() > 2) ctx.fail("input {} must have rank <= 2, found shape {}", k, shape_to_string(t.shape()));
    const int64_t n = t.rank() == 0 ? 1 : t.shape()[0];
    if (rows < 0) rows = n;
    else if (rows != n) ctx.fail("input {} has {} rows, expected {}", k, n, rows);
    total += dims[k];
  }
  if (rows < 0) rows = 0;
  Tensor& out = ctx.allocate_output(0, DType::kFloat32, {rows, total});
  float* po = out.mutable_data<float>();
  int64_t col = 0;
  for (std::size_t k = 0; k < dims.size(); ++k) {
    const Tensor& t = ctx.input(k);
    const int64_t c = t.rank() == 2 ? t.shape()[1] : 1;
    dispatch<TypeList<float, double, int64_t, int32_t>>(t.dtype(), ctx, [&]<typename T>() {
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < std::min(c, dims[k]); ++j)
          po[r * total + col + j] = static_cast<float>(t.data<T>()[r * c + j]);
    });
    col += dims[k];
  }
}

}  // namespace

PARITY_KERNEL("ai.onnx.ml", "OneHotEncoder", 1, one_hot_encoder);
PARITY_KERNEL("ai.onnx.ml", "FeatureVectorizer", 1, feature_vectorizer);

}  // namespace parity::ops
