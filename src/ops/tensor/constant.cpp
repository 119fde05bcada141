// Constant, ConstantOfShape, EyeLike, Range.
#include <cmath>

#include "parity/onnx/tensor_proto.h"
#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

// A SparseTensorProto (values, indices linear [NNZ] or coordinate [NNZ, rank], dims) as a dense tensor.
Tensor dense_from_sparse(const KernelContext& ctx, const ::onnx::SparseTensorProto& sparse) {
  Shape dims(sparse.dims().begin(), sparse.dims().end());
  Tensor values = onnx::tensor_from_proto(sparse.values(), ".", ctx.limits().max_elements);
  Tensor dense = Tensor::zeros(values.dtype(), dims, ctx.limits().max_elements);
  const int64_t nnz = values.size();
  if (nnz == 0) return dense;
  Tensor indices = onnx::tensor_from_proto(sparse.indices(), ".", ctx.limits().max_elements);
  IndexReader idx(indices, ctx);
  const int64_t total = dense.size();
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> linear(static_cast<std::size_t>(nnz));
  if (indices.rank() == 1 && indices.size() == nnz) {
    for (int64_t i = 0; i < nnz; ++i) linear[i] = idx[i];
  } else if (indices.rank() == 2 && indices.shape()[0] == nnz && indices.shape()[1] == rank) {
    std::vector<int64_t> st = strides_of(dims);
    for (int64_t i = 0; i < nnz; ++i) {
      int64_t off = 0;
      for (int64_t k = 0; k < rank; ++k) {
        int64_t c = idx[i * rank + k];
        if (c < 0 || c >= dims[k]) ctx.fail("sparse_value index {} out of range for dim {}", c, dims[k]);
        off += c * st[k];
      }
      linear[i] = off;
    }
  } else {
    ctx.fail("sparse_value indices have shape {}, expected ({},) or ({}, {})", shape_to_string(indices.shape()), nnz,
             nnz, rank);
  }
  dispatch_bytes(values.dtype(), ctx, [&]<typename T>() {
    T* d = dense.mutable_data<T>();
    const T* v = values.data<T>();
    for (int64_t i = 0; i < nnz; ++i) {
      if (linear[i] < 0 || linear[i] >= total)
        ctx.fail("sparse_value index {} out of range for {} elements", linear[i], total);
      d[linear[i]] = v[i];
    }
  });
  return dense;
}

void constant(KernelContext& ctx) {
  for (const auto& a : ctx.node().attribute()) {
    const std::string& name = a.name();
    if (name == "value") {
      ctx.set_output(0, ctx.attr_tensor("value"));
      return;
    }
    if (name == "sparse_value") {
      ctx.set_output(0, dense_from_sparse(ctx, a.sparse_tensor()));
      return;
    }
    if (name == "value_float") {
      ctx.allocate_output(0, DType::kFloat32, {}).mutable_data<float>()[0] = a.f();
      return;
    }
    if (name == "value_floats") {
      Tensor& out = ctx.allocate_output(0, DType::kFloat32, {a.floats_size()});
      for (int i = 0; i < a.floats_size(); ++i) out.mutable_data<float>()[i] = a.floats(i);
      return;
    }
    if (name == "value_int") {
      ctx.allocate_output(0, DType::kInt64, {}).mutable_data<int64_t>()[0] = a.i();
      return;
    }
    if (name == "value_ints") {
      Tensor& out = ctx.allocate_output(0, DType::kInt64, {a.ints_size()});
      for (int i = 0; i < a.ints_size(); ++i) out.mutable_data<int64_t>()[i] = a.ints(i);
      return;
    }
    if (name == "value_string") {
      ctx.allocate_output(0, DType::kString, {}).mutable_data<std::string>()[0] = a.s();
      return;
    }
    if (name == "value_strings") {
      Tensor& out = ctx.allocate_output(0, DType::kString, {a.strings_size()});
      for (int i = 0; i < a.strings_size(); ++i) out.mutable_data<std::string>()[i] = a.strings(i);
      return;
    }
  }
  ctx.fail("expected one of the attributes value, sparse_value, value_float(s), value_int(s), value_string(s)");
}

std::vector<int64_t> read_shape_input(const KernelContext& ctx, const Tensor& t) {
  if (t.rank() > 1) ctx.fail("shape input must be 1-D, found shape {}", shape_to_string(t.shape()));
  std::vector<int64_t> dims = read_int_list(t, ctx);
  for (int64_t d : dims)
    if (d < 0) ctx.fail("shape input has a negative dimension {}", d);
  return dims;
}

void constant_of_shape(KernelContext& ctx) {
  Shape shape = read_shape_input(ctx, ctx.input(0));
  if (!ctx.has_attribute("value")) {
    ctx.allocate_output(0, DType::kFloat32, shape);
    return;
  }
  Tensor value = ctx.attr_tensor("value");
  if (value.size() != 1) ctx.fail("attribute 'value' must hold one element, found {}", value.size());
  Tensor& out = ctx.allocate_output(0, value.dtype(), shape);
  dispatch_bytes(value.dtype(), ctx, [&]<typename T>() {
    T v = value.data<T>()[0];
    T* o = out.mutable_data<T>();
    for (int64_t i = 0, n = out.size(); i < n; ++i) o[i] = v;
  });
}

void eye_like(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("input must be 2-D, found shape {}", shape_to_string(x.shape()));
  DType dtype = x.dtype();
  if (ctx.has_attribute("dtype")) dtype = dtype_from_onnx(static_cast<int32_t>(ctx.attr_int("dtype")));
  int64_t k = ctx.attr_int("k", 0);
  Tensor& out = ctx.allocate_output(0, dtype, x.shape());
  const int64_t rows = x.shape()[0], cols = x.shape()[1];
  dispatch<NumericAndBoolTypes>(dtype, ctx, [&]<typename T>() {
    T* o = out.mutable_data<T>();
    const T one = convert<T>(1);
    for (int64_t i = 0; i < rows; ++i) {
      int64_t j = i + k;
      if (j >= 0 && j < cols) o[i * cols + j] = one;
    }
  });
}

void range(KernelContext& ctx) {
  const Tensor& start_t = ctx.input(0);
  const Tensor& limit_t = ctx.input(1);
  const Tensor& delta_t = ctx.input(2);
  if (limit_t.dtype() != start_t.dtype() || delta_t.dtype() != start_t.dtype())
    ctx.fail("start, limit and delta must share one type");
  for (const Tensor* t : {&start_t, &limit_t, &delta_t})
    if (t->size() != 1) ctx.fail("start, limit and delta must be scalars, found shape {}", shape_to_string(t->shape()));
  dispatch<NumericTypes>(start_t.dtype(), ctx, [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      double start = convert<double>(start_t.data<T>()[0]);
      double limit = convert<double>(limit_t.data<T>()[0]);
      double delta = convert<double>(delta_t.data<T>()[0]);
      if (delta == 0) ctx.fail("delta must not be zero");
      double count = std::ceil((limit - start) / delta);
      if (!(count > 0)) count = 0;
      if (count > static_cast<double>(ctx.limits().max_elements))
        ctx.fail("Range would produce {} elements, over the limit", count);
      int64_t n = static_cast<int64_t>(count);
      Tensor& out = ctx.allocate_output(0, start_t.dtype(), {n});
      T* o = out.mutable_data<T>();
      if (ctx.fp64() || std::is_same_v<T, double>) {
        for (int64_t i = 0; i < n; ++i) o[i] = convert<T>(start + static_cast<double>(i) * delta);
      } else {
        using C = compute_t<T>;
        C s = static_cast<C>(start), d = static_cast<C>(delta);
        for (int64_t i = 0; i < n; ++i) o[i] = convert<T>(s + static_cast<C>(i) * d);
      }
    } else {
      using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
      W start = start_t.data<T>()[0], limit = limit_t.data<T>()[0], delta = delta_t.data<T>()[0];
      if (delta == 0) ctx.fail("delta must not be zero");
      W diff = limit - start;
      int64_t n = 0;
      if constexpr (std::is_signed_v<T>) {
        if ((diff > 0 && delta > 0) || (diff < 0 && delta < 0)) {
          W q = diff / delta, r = diff % delta;
          W count = q + (r != 0 ? 1 : 0);
          n = count > static_cast<W>(INT64_MAX) ? -1 : static_cast<int64_t>(count);
        }
      } else {
        if (limit > start) {
          W count = (diff + delta - 1) / delta;
          n = count > static_cast<W>(INT64_MAX) ? -1 : static_cast<int64_t>(count);
        }
      }
      if (n < 0 || n > ctx.limits().max_elements) ctx.fail("Range would produce too many elements");
      Tensor& out = ctx.allocate_output(0, start_t.dtype(), {n});
      T* o = out.mutable_data<T>();
      for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(start + static_cast<W>(i) * delta);
    }
  });
}

}  // namespace

PARITY_KERNEL("", "Constant", 1, constant);
PARITY_KERNEL("", "ConstantOfShape", 9, constant_of_shape);
PARITY_KERNEL("", "EyeLike", 9, eye_like);
PARITY_KERNEL("", "Range", 11, range);

}  // namespace parity::ops::tensor
