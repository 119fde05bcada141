// ScatterElements (and the deprecated Scatter), ScatterND, TensorScatter.
#include <algorithm>

#include "tensor/tensor_util.h"

namespace parity::ops::tensor {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction_of(const KernelContext& ctx) {
  if (ctx.opset() < 16) return Reduction::kNone;
  std::string r = ctx.attr_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max" && ctx.opset() >= 18) return Reduction::kMax;
  if (r == "min" && ctx.opset() >= 18) return Reduction::kMin;
  ctx.fail("unknown reduction '{}'", r);
}

// Applies out[dst] (op)= upd[src] for each (dst, src) pair produced by `pairs(fn)`.
template <typename Pairs>
void apply_updates(KernelContext& ctx, Tensor& out, const Tensor& updates, Reduction red, Pairs&& pairs) {
  if (red == Reduction::kNone) {
    dispatch_bytes(out.dtype(), ctx, [&]<typename T>() {
      T* o = out.mutable_data<T>();
      const T* u = updates.data<T>();
      pairs([&](int64_t dst, int64_t src, int64_t n) {
        for (int64_t j = 0; j < n; ++j) o[dst + j] = u[src + j];
      });
    });
    return;
  }
  dispatch<NumericAndBoolTypes>(out.dtype(), ctx, [&]<typename T>() {
    using C = compute_t<T>;
    T* o = out.mutable_data<T>();
    const T* u = updates.data<T>();
    pairs([&](int64_t dst, int64_t src, int64_t n) {
      for (int64_t j = 0; j < n; ++j) {
        C a = load(o, dst + j), b = load(u, src + j), r;
        switch (red) {
          case Reduction::kAdd:
            if constexpr (std::is_same_v<C, bool>) r = a || b;
            else r = wrap_add(a, b);
            break;
          case Reduction::kMul:
            if constexpr (std::is_same_v<C, bool>) r = a && b;
            else r = wrap_mul(a, b);
            break;
          case Reduction::kMax: r = std::max(a, b); break;
          case Reduction::kMin: r = std::min(a, b); break;
          default: r = b; break;
        }
        o[dst + j] = convert<T>(r);
      }
    });
  });
}

Tensor& copy_of_data(KernelContext& ctx, const Tensor& data) {
  Tensor& out = ctx.allocate_output(0, data.dtype(), data.shape());
  if (data.size() == 0) return out;
  dispatch_bytes(data.dtype(), ctx, [&]<typename T>() {
    const T* s = data.data<T>();
    T* d = out.mutable_data<T>();
    if constexpr (std::is_trivially_copyable_v<T>) std::memcpy(d, s, static_cast<std::size_t>(data.size()) * sizeof(T));
    else std::copy(s, s + data.size(), d);
  });
  return out;
}

void scatter_elements(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int64_t rank = data.rank();
  if (rank == 0) ctx.fail("data must have rank >= 1");
  if (indices.shape() != updates.shape())
    ctx.fail("indices shape {} differs from updates shape {}", shape_to_string(indices.shape()),
             shape_to_string(updates.shape()));
  if (indices.rank() != rank) ctx.fail("indices rank {} differs from data rank {}", indices.rank(), rank);
  if (updates.dtype() != data.dtype()) ctx.fail("updates type differs from data type");
  const int64_t axis = normalize_axis(ctx.attr_int("axis", 0), rank, ctx);
  for (int64_t k = 0; k < rank; ++k)
    if (k != axis && indices.shape()[k] > data.shape()[k])
      ctx.fail("indices shape {} exceeds data shape {} on axis {}", shape_to_string(indices.shape()),
               shape_to_string(data.shape()), k);
  Reduction red = reduction_of(ctx);
  IndexReader idx(indices, ctx);
  Tensor& out = copy_of_data(ctx, data);
  const int64_t n = indices.size();
  if (n == 0) return;
  std::vector<int64_t> dstr = strides_of(data.shape());
  const int64_t dim = data.shape()[axis];
  // Resolve destinations first (validating every index), then apply in order.
  std::vector<int64_t> dst(static_cast<std::size_t>(n));
  std::vector<int64_t> counter(static_cast<std::size_t>(rank), 0);
  int64_t base = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t j = idx[i];
    if (j < 0) j += dim;
    if (j < 0 || j >= dim) ctx.fail("index {} is out of range for a dimension of size {}", idx[i], dim);
    dst[i] = base + j * dstr[axis];
    for (int64_t k = rank; k-- > 0;) {
      if (k != axis) base += dstr[k];
      if (++counter[k] < indices.shape()[k]) break;
      if (k != axis) base -= dstr[k] * counter[k];
      counter[k] = 0;
    }
  }
  apply_updates(ctx, out, updates, red, [&](auto&& fn) {
    for (int64_t i = 0; i < n; ++i) fn(dst[i], i, 1);
  });
}

void scatter_nd(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1");
  if (updates.dtype() != data.dtype()) ctx.fail("updates type differs from data type");
  const int64_t k = indices.shape()[q - 1];
  if (k > r) ctx.fail("indices last dimension {} exceeds data rank {}", k, r);
  Shape expected(indices.shape().begin(), indices.shape().end() - 1);
  expected.insert(expected.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != expected)
    ctx.fail("updates shape {} differs from the expected {}", shape_to_string(updates.shape()),
             shape_to_string(expected));
  Reduction red = reduction_of(ctx);
  IndexReader idx(indices, ctx);
  Tensor& out = copy_of_data(ctx, data);
  const int64_t tuples = product(indices.shape(), 0, static_cast<std::size_t>(q - 1));
  const int64_t slice = product(data.shape(), static_cast<std::size_t>(k), data.shape().size());
  std::vector<int64_t> dstr = strides_of(data.shape());
  std::vector<int64_t> dst(static_cast<std::size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t dim = data.shape()[j];
      int64_t v = idx[t * k + j];
      if (v < 0) v += dim;
      if (v < 0 || v >= dim) ctx.fail("index {} is out of range for a dimension of size {}", idx[t * k + j], dim);
      off += v * dstr[j];
    }
    dst[t] = off;
  }
  if (slice == 0) return;
  apply_updates(ctx, out, updates, red, [&](auto&& fn) {
    for (int64_t t = 0; t < tuples; ++t) fn(dst[t], t * slice, slice);
  });
}

void tensor_scatter(KernelContext& ctx) {
  const Tensor& past = ctx.input(0);
  const Tensor& update = ctx.input(1);
  const int64_t rank = past.rank();
  if (rank < 1) ctx.fail("past_cache must have rank >= 1");
  if (update.rank() != rank || update.dtype() != past.dtype())
    ctx.fail("update ({} {}) does not match past_cache ({} {})", dtype_name(update.dtype()),
             shape_to_string(update.shape()), dtype_name(past.dtype()), shape_to_string(past.shape()));
  const int64_t axis = normalize_axis(ctx.attr_int("axis", -2), rank, ctx);
  if (axis == 0) ctx.fail("axis must not be the batch axis 0");
  std::string mode = ctx.attr_string("mode", "linear");
  if (mode != "linear" && mode != "circular") ctx.fail("unknown mode '{}'", mode);
  for (int64_t i = 0; i < rank; ++i) {
    if (i != axis && past.shape()[i] != update.shape()[i])
      ctx.fail("update shape {} differs from past_cache shape {} on axis {}", shape_to_string(update.shape()),
               shape_to_string(past.shape()), i);
  }
  const int64_t max_len = past.shape()[axis], seq_len = update.shape()[axis];
  if (seq_len > max_len) ctx.fail("update sequence length {} exceeds the cache length {}", seq_len, max_len);
  const int64_t batch = past.shape()[0];
  std::vector<int64_t> write(static_cast<std::size_t>(batch), 0);
  if (ctx.has_input(2)) {
    const Tensor& w = ctx.input(2);
    std::vector<int64_t> v = read_int_list(w, ctx);
    if (static_cast<int64_t>(v.size()) != batch) ctx.fail("write_indices has {} entries, expected {}", v.size(), batch);
    write = v;
  }
  Tensor& out = copy_of_data(ctx, past);
  const int64_t outer = product(past.shape(), 0, static_cast<std::size_t>(axis));
  const int64_t per_batch = outer / std::max<int64_t>(batch, 1);
  const int64_t inner = product(past.shape(), static_cast<std::size_t>(axis) + 1, past.shape().size());
  if (inner == 0 || seq_len == 0) return;
  apply_updates(ctx, out, update, Reduction::kNone, [&](auto&& fn) {
    for (int64_t o = 0; o < outer; ++o) {
      int64_t b = o / per_batch;
      for (int64_t s = 0; s < seq_len; ++s) {
        int64_t pos = write[b] + s;
        if (mode == "circular") pos = ((pos % max_len) + max_len) % max_len;
        if (pos < 0 || pos >= max_len)
          ctx.fail("write index {} + {} is out of range for the cache length {}", write[b], s, max_len);
        fn((o * max_len + pos) * inner, (o * seq_len + s) * inner, inner);
      }
    }
  });
}

}  // namespace

PARITY_KERNEL("", "Scatter", 9, scatter_elements);
PARITY_KERNEL("", "ScatterElements", 11, scatter_elements);
PARITY_KERNEL("", "ScatterND", 11, scatter_nd);
PARITY_KERNEL("", "TensorScatter", 24, tensor_scatter);

}  // namespace parity::ops::tensor
