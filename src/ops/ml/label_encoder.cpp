// ai.onnx.ml LabelEncoder: opset 1 (classes_strings, string <-> int64), opset 2 (keys_* /
// values_* lists) and opset 4 (also keys_tensor / values_tensor / default_tensor). NaN float
// keys match any NaN input; a repeated key's last value wins.
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "misc/misc_util.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/ops/dispatch.h"

namespace parity::ops {
namespace {

enum class KeyKind { kString, kInt, kFloat };

KeyKind key_kind(DType dtype, const KernelContext& ctx) {
  if (dtype == DType::kString) return KeyKind::kString;
  if (dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 || dtype == DType::kBFloat16)
    return KeyKind::kFloat;
  if (is_integer(dtype) && !is_packed(dtype)) return KeyKind::kInt;
  ctx.unsupported("key element type {} is not supported", dtype_name(dtype));
}

// Element i of a numeric tensor as int64 / double.
int64_t int_at(const Tensor& t, int64_t i, const KernelContext& ctx) {
  return dispatch<IntTypes>(t.dtype(), ctx, [&]<typename T>() { return static_cast<int64_t>(t.data<T>()[i]); });
}
double float_at(const Tensor& t, int64_t i, const KernelContext& ctx) {
  return dispatch<FloatTypes>(
      t.dtype(), ctx, [&]<typename T>() { return static_cast<double>(static_cast<compute_t<T>>(t.data<T>()[i])); });
}

struct KeyIndex {
  KeyKind kind = KeyKind::kString;
  std::unordered_map<std::string, int64_t> strings;
  std::unordered_map<int64_t, int64_t> ints;
  std::unordered_map<double, int64_t> floats;
  int64_t nan_index = -1;

  void add(const Tensor& keys, const KernelContext& ctx) {
    kind = key_kind(keys.dtype(), ctx);
    for (int64_t i = 0; i < keys.size(); ++i) {
      if (kind == KeyKind::kString) strings.insert_or_assign(keys.data<std::string>()[i], i);
      else if (kind == KeyKind::kInt) ints.insert_or_assign(int_at(keys, i, ctx), i);
      else {
        double v = float_at(keys, i, ctx);
        if (std::isnan(v)) nan_index = i;
        else floats.insert_or_assign(v, i);
      }
    }
  }
  // Index of element i of x among the keys, or -1.
  int64_t find(const Tensor& x, int64_t i, const KernelContext& ctx) const {
    if (kind == KeyKind::kString) {
      auto it = strings.find(x.data<std::string>()[i]);
      return it == strings.end() ? -1 : it->second;
    }
    if (kind == KeyKind::kInt) {
      auto it = ints.find(int_at(x, i, ctx));
      return it == ints.end() ? -1 : it->second;
    }
    double v = float_at(x, i, ctx);
    if (std::isnan(v)) return nan_index;
    auto it = floats.find(v);
    return it == floats.end() ? -1 : it->second;
  }
};

Tensor strings_tensor(const KernelContext& ctx, const std::vector<std::string>& v) {
  Tensor t = misc::new_tensor(ctx, DType::kString, {static_cast<int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) t.mutable_data<std::string>()[i] = v[i];
  return t;
}
Tensor ints_tensor(const KernelContext& ctx, const std::vector<int64_t>& v) {
  Tensor t = misc::new_tensor(ctx, DType::kInt64, {static_cast<int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) t.mutable_data<int64_t>()[i] = v[i];
  return t;
}
Tensor floats_tensor(const KernelContext& ctx, const std::vector<float>& v) {
  Tensor t = misc::new_tensor(ctx, DType::kFloat32, {static_cast<int64_t>(v.size())});
  for (std::size_t i = 0; i < v.size(); ++i) t.mutable_data<float>()[i] = v[i];
  return t;
}

void encode(KernelContext& ctx, const Tensor& x, const KeyIndex& index, const Tensor& values, const Tensor& fallback) {
  if (fallback.size() < 1) ctx.fail("the default value is empty");
  Tensor& out = ctx.allocate_output(0, values.dtype(), x.shape());
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t k = index.find(x, i, ctx);
    if (k >= 0) misc::copy_elements(ctx, values.dtype(), values.raw(), k, out.mutable_raw(), i, 1);
    else misc::copy_elements(ctx, values.dtype(), fallback.raw(), 0, out.mutable_raw(), i, 1);
  }
}

void label_encoder_v1(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<std::string> classes = ctx.attr_strings("classes_strings");
  if (x.dtype() == DType::kString) {
    KeyIndex index;
    index.add(strings_tensor(ctx, classes), ctx);
    std::vector<int64_t> positions(classes.size());
    for (std::size_t i = 0; i < classes.size(); ++i) positions[i] = static_cast<int64_t>(i);
    encode(ctx, x, index, ints_tensor(ctx, positions), ints_tensor(ctx, {ctx.attr_int("default_int64")}));
  } else if (x.dtype() == DType::kInt64) {
    Tensor& out = ctx.allocate_output(0, DType::kString, x.shape());
    const std::string fallback = ctx.attr_string("default_string");
    for (int64_t i = 0; i < x.size(); ++i) {
      int64_t v = x.data<int64_t>()[i];
      out.mutable_data<std::string>()[i] =
          v >= 0 && v < static_cast<int64_t>(classes.size()) ? classes[static_cast<std::size_t>(v)] : fallback;
    }
  } else {
    ctx.fail("input must be string or int64, found {}", dtype_name(x.dtype()));
  }
}

void label_encoder(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor keys;
  if (ctx.has_attribute("keys_tensor")) keys = ctx.attr_tensor("keys_tensor");
  else if (ctx.has_attribute("keys_strings")) keys = strings_tensor(ctx, ctx.attr_strings("keys_strings"));
  else if (ctx.has_attribute("keys_int64s")) keys = ints_tensor(ctx, ctx.attr_ints("keys_int64s"));
  else if (ctx.has_attribute("keys_floats")) keys = floats_tensor(ctx, ctx.attr_floats("keys_floats"));
  else ctx.fail("one of the keys_* attributes is required");
  Tensor values, fallback;
  if (ctx.has_attribute("values_tensor")) {
    values = ctx.attr_tensor("values_tensor");
    if (ctx.has_attribute("default_tensor")) {
      fallback = ctx.attr_tensor("default_tensor");
      if (fallback.dtype() != values.dtype()) ctx.fail("default_tensor's type differs from values_tensor's");
    } else {
      fallback = misc::new_tensor(ctx, values.dtype(), {1});
      if (values.dtype() == DType::kString) fallback.mutable_data<std::string>()[0] = "_Unused";
      else if (is_integer(values.dtype()))
        dispatch<IntTypes>(values.dtype(), ctx,
                           [&]<typename T>() { fallback.mutable_data<T>()[0] = static_cast<T>(-1); });
      else
        dispatch<FloatTypes>(values.dtype(), ctx,
                             [&]<typename T>() { fallback.mutable_data<T>()[0] = convert<T>(-0.0f); });
    }
  } else if (ctx.has_attribute("values_strings")) {
    values = strings_tensor(ctx, ctx.attr_strings("values_strings"));
    fallback = strings_tensor(ctx, {ctx.attr_string("default_string")});
  } else if (ctx.has_attribute("values_int64s")) {
    values = ints_tensor(ctx, ctx.attr_ints("values_int64s"));
    fallback = ints_tensor(ctx, {ctx.attr_int("default_int64")});
  } else if (ctx.has_attribute("values_floats")) {
    values = floats_tensor(ctx, ctx.attr_floats("values_floats"));
    fallback = floats_tensor(ctx, {ctx.attr_float("default_float")});
  } else {
    ctx.fail("one of the values_* attributes is required");
  }
  if (keys.size() != values.size()) ctx.fail("keys has {} entries but values has {}", keys.size(), values.size());
  KeyIndex index;
  index.add(keys, ctx);
  if (key_kind(x.dtype(), ctx) != index.kind)
    ctx.fail("input element type {} does not match the keys' type {}", dtype_name(x.dtype()), dtype_name(keys.dtype()));
  encode(ctx, x, index, values, fallback);
}

}  // namespace

PARITY_KERNEL("ai.onnx.ml", "LabelEncoder", 1, label_encoder_v1);
PARITY_KERNEL("ai.onnx.ml", "LabelEncoder", 2, label_encoder);

}  // namespace parity::ops
