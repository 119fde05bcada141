// Einsum: explicit and implicit outputs, ellipsis (broadcast), repeated labels (diagonals), sums
// over labels absent from the output. Every label gets one loop; each operand's offset moves by
// the summed strides of the axes carrying that label.
#include <map>

#include "nn/nn_util.h"

namespace parity::ops {
namespace {

constexpr int kEllipsisBase = 1000;  // labels of ellipsis dims: kEllipsisBase + position

struct Term {
  std::vector<int> labels;  // letters as their char code; ellipsis dims expanded later
  bool has_ellipsis = false;
  std::size_t ellipsis_at = 0;  // index in labels where the ellipsis sits
};

Term parse_term(const KernelContext& ctx, const std::string& s) {
  Term t;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      if (i + 2 >= s.size() || s[i + 1] != '.' || s[i + 2] != '.' || t.has_ellipsis)
        ctx.fail("malformed ellipsis in einsum term '{}'", s);
      t.has_ellipsis = true;
      t.ellipsis_at = t.labels.size();
      i += 2;
      continue;
    }
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
      ctx.fail("invalid character '{}' in einsum equation", ch);
    t.labels.push_back(static_cast<unsigned char>(ch));
  }
  return t;
}

void einsum(KernelContext& ctx) {
  std::string eq = ctx.attr_string("equation");
  std::string lhs = eq, rhs;
  bool explicit_out = false;
  if (auto arrow = eq.find("->"); arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    explicit_out = true;
  }
  std::vector<std::string> parts;
  {
    std::size_t start = 0;
    while (true) {
      auto comma = lhs.find(',', start);
      parts.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  const std::size_t n = ctx.num_inputs();
  if (parts.size() != n) ctx.fail("equation '{}' has {} operands, the node {} inputs", eq, parts.size(), n);
  std::vector<const Tensor*> xs;
  for (std::size_t k = 0; k < n; ++k) xs.push_back(&ctx.input(k));
  const DType dtype = xs[0]->dtype();
  for (auto* t : xs)
    if (t->dtype() != dtype) ctx.fail("all inputs must have the same element type");

  // Expand each operand's labels (ellipsis dims right-aligned across operands).
  std::size_t ell_rank = 0;
  std::vector<Term> terms;
  for (std::size_t k = 0; k < n; ++k) {
    Term t = parse_term(ctx, parts[k]);
    const std::size_t rank = static_cast<std::size_t>(xs[k]->rank());
    if (t.has_ellipsis) {
      if (rank < t.labels.size()) ctx.fail("operand {} has rank {}, fewer than its labels", k, rank);
      ell_rank = std::max(ell_rank, rank - t.labels.size());
    } else if (rank != t.labels.size()) {
      ctx.fail("operand {} has rank {} but term '{}' has {} labels", k, rank, parts[k], t.labels.size());
    }
    terms.push_back(t);
  }
  std::map<int, int64_t> sizes;
  std::vector<std::vector<int>> op_labels(n);
  for (std::size_t k = 0; k < n; ++k) {
    const Term& t = terms[k];
    std::vector<int> labels;
    const std::size_t rank = static_cast<std::size_t>(xs[k]->rank());
    const std::size_t e = t.has_ellipsis ? rank - t.labels.size() : 0;
    for (std::size_t i = 0; i < t.labels.size(); ++i) {
      if (t.has_ellipsis && i == t.ellipsis_at)
        for (std::size_t j = 0; j < e; ++j) labels.push_back(kEllipsisBase + static_cast<int>(ell_rank - e + j));
      labels.push_back(t.labels[i]);
    }
    if (t.has_ellipsis && t.ellipsis_at == t.labels.size())
      for (std::size_t j = 0; j < e; ++j) labels.push_back(kEllipsisBase + static_cast<int>(ell_rank - e + j));
    for (std::size_t d = 0; d < labels.size(); ++d) {
      const int64_t dim = xs[k]->shape()[d];
      auto it = sizes.find(labels[d]);
      if (it == sizes.end()) {
        sizes[labels[d]] = dim;
      } else if (it->second != dim) {
        if (labels[d] >= kEllipsisBase && (dim == 1 || it->second == 1)) it->second = std::max(it->second, dim);
        else ctx.fail("label '{}' has sizes {} and {}", labels[d] < kEllipsisBase ? static_cast<char>(labels[d]) : '.',
                      it->second, dim);
      }
    }
    op_labels[k] = labels;
  }
  // Output labels.
  std::vector<int> out_labels;
  if (explicit_out) {
    Term t = parse_term(ctx, rhs);
    for (std::size_t i = 0; i <= t.labels.size(); ++i) {
      if (t.has_ellipsis && i == t.ellipsis_at)
        for (std::size_t j = 0; j < ell_rank; ++j) out_labels.push_back(kEllipsisBase + static_cast<int>(j));
      if (i < t.labels.size()) {
        if (!sizes.count(t.labels[i]))
          ctx.fail("output label '{}' does not appear in the inputs", static_cast<char>(t.labels[i]));
        out_labels.push_back(t.labels[i]);
      }
    }
  } else {
    for (std::size_t j = 0; j < ell_rank; ++j) out_labels.push_back(kEllipsisBase + static_cast<int>(j));
    std::map<int, int> counts;
    for (auto& ls : op_labels)
      for (int l : ls)
        if (l < kEllipsisBase) counts[l]++;
    for (auto& [l, c] : counts)
      if (c == 1) out_labels.push_back(l);
  }
  // All labels: output ones first, then the summed ones.
  std::vector<int> loop = out_labels;
  for (auto& [l, s] : sizes)
    if (std::find(loop.begin(), loop.end(), l) == loop.end()) loop.push_back(l);
  const std::size_t nl = loop.size(), no = out_labels.size();
  Shape out_shape;
  for (int l : out_labels) out_shape.push_back(sizes[l]);
  std::vector<int64_t> dims(nl);
  for (std::size_t i = 0; i < nl; ++i) dims[i] = sizes[loop[i]];
  // strides[k][i]: offset step of operand k for loop label i.
  std::vector<std::vector<int64_t>> strides(n, std::vector<int64_t>(nl, 0));
  for (std::size_t k = 0; k < n; ++k) {
    auto cs = nn::contiguous_strides(xs[k]->shape());
    for (std::size_t d = 0; d < op_labels[k].size(); ++d) {
      if (xs[k]->shape()[d] == 1 && sizes[op_labels[k][d]] != 1) continue;  // broadcast
      auto pos = std::find(loop.begin(), loop.end(), op_labels[k][d]) - loop.begin();
      strides[k][static_cast<std::size_t>(pos)] += cs[d];
    }
  }
  Tensor& y = ctx.allocate_output(0, dtype, out_shape);
  const int64_t out_n = y.size();
  int64_t inner_n = 1;
  for (std::size_t i = no; i < nl; ++i) inner_n *= dims[i];
  if (out_n == 0) return;
  dispatch<NumericTypes>(dtype, ctx, [&]<typename T>() {
    using A =
        std::conditional_t<is_float_v<T>, double, std::conditional_t<std::is_same_v<T, uint64_t>, uint64_t, int64_t>>;
    std::vector<const T*> ptr(n);
    for (std::size_t k = 0; k < n; ++k) ptr[k] = xs[k]->data<T>();
    T* py = y.mutable_data<T>();
    std::vector<int64_t> idx(nl, 0), off(n, 0), sidx(nl - no, 0), cur(n, 0);
    for (int64_t o = 0; o < out_n; ++o) {
      A acc = 0;
      std::fill(sidx.begin(), sidx.end(), 0);
      cur = off;  // the output position's offsets, summed labels at 0
      for (int64_t s = 0; s < inner_n; ++s) {
        A prod = 1;
        for (std::size_t k = 0; k < n; ++k) prod *= static_cast<A>(convert<compute_t<T>>(ptr[k][cur[k]]));
        acc += prod;
        for (std::size_t i = nl - no; i-- > 0;) {
          const std::size_t li = no + i;
          ++sidx[i];
          for (std::size_t k = 0; k < n; ++k) cur[k] += strides[k][li];
          if (sidx[i] < dims[li]) break;
          for (std::size_t k = 0; k < n; ++k) cur[k] -= strides[k][li] * dims[li];
          sidx[i] = 0;
        }
      }
      if constexpr (is_float_v<T>)
        py[o] = nn::from_compute<T>(static_cast<compute_t<T>>(acc));
      else
        py[o] = static_cast<T>(acc);
      for (std::size_t i = no; i-- > 0;) {
        ++idx[i];
        for (std::size_t k = 0; k < n; ++k) off[k] += strides[k][i];
        if (idx[i] < dims[i]) break;
        for (std::size_t k = 0; k < n; ++k) off[k] -= strides[k][i] * dims[i];
        idx[i] = 0;
      }
    }
  });
}

}  // namespace

PARITY_KERNEL("", "Einsum", 12, einsum);

}  // namespace parity::ops
