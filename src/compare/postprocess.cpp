#include "parity/compare/postprocess.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "parity/core/error.h"
#include "parity/core/values.h"

namespace parity::compare {

Tensor top_k_indices(const TensorView& tensor, int64_t k, int64_t axis) {
  const DType dtype = tensor.dtype();
  if (dtype == DType::kBool || dtype == DType::kString || !has_numeric_values(dtype))
    raise<InvalidInputError>("top-K needs a numeric tensor, found dtype {}", dtype_name(dtype));
  const int64_t rank = tensor.rank();
  if (rank == 0) raise<InvalidInputError>("top-K needs a tensor of rank 1 or more, found a scalar");
  if (axis < -rank || axis >= rank)
    raise<InvalidInputError>("top-K axis {} is out of range for a tensor of rank {}", axis, rank);
  if (axis < 0) axis += rank;
  if (k <= 0) raise<InvalidInputError>("top-K needs k >= 1, found {}", k);
  const Shape& shape = tensor.shape();
  const int64_t length = shape[static_cast<std::size_t>(axis)];
  const int64_t kept = std::min(k, length);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[static_cast<std::size_t>(d)];
  Shape out_shape = shape;
  out_shape[static_cast<std::size_t>(axis)] = kept;
  Tensor out = Tensor::zeros(DType::kInt64, out_shape);
  int64_t* result = out.mutable_data<int64_t>();
  const bool is_unsigned = is_integer(dtype) && (dtype == DType::kUInt8 || dtype == DType::kUInt16 ||
                                                 dtype == DType::kUInt32 || dtype == DType::kUInt64);
  const double modulus = is_unsigned ? std::ldexp(1.0, dtype_bits(dtype)) : 0;
  std::vector<double> keys(static_cast<std::size_t>(length));
  std::vector<int64_t> order(static_cast<std::size_t>(length));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < length; ++j) {
        double v = element_as_double(tensor, (o * length + j) * inner + i);
        keys[static_cast<std::size_t>(j)] = is_unsigned ? (v == 0 ? 0 : modulus - v) : -v;
      }
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        double ka = keys[static_cast<std::size_t>(a)], kb = keys[static_cast<std::size_t>(b)];
        if (std::isnan(kb)) return !std::isnan(ka);
        if (std::isnan(ka)) return false;
        return ka < kb;
      });
      for (int64_t j = 0; j < kept; ++j) result[(o * kept + j) * inner + i] = order[static_cast<std::size_t>(j)];
    }
  }
  return out;
}

std::pair<std::string, TopK> parse_postprocess(std::string_view text) {
  std::string name;
  std::string_view spec = text;
  if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
    name = std::string(text.substr(0, colon));
    spec = text.substr(colon + 1);
  }
  auto bad = [&]() -> std::pair<std::string, TopK> {
    raise<InvalidInputError>("--postprocess: cannot parse '{}'; expected [<output>:]top-<K>[,axis=<A>]", text);
  };
  if (!spec.starts_with("top-")) bad();
  spec.remove_prefix(4);
  TopK rule;
  std::string_view k_text = spec, axis_text;
  if (auto comma = spec.find(','); comma != std::string_view::npos) {
    k_text = spec.substr(0, comma);
    axis_text = spec.substr(comma + 1);
    if (!axis_text.starts_with("axis=")) bad();
    axis_text.remove_prefix(5);
  }
  try {
    std::size_t used = 0;
    rule.k = std::stoll(std::string(k_text), &used);
    if (used != k_text.size() || rule.k <= 0) bad();
    if (!axis_text.empty()) {
      rule.axis = std::stoll(std::string(axis_text), &used);
      if (used != axis_text.size()) bad();
    }
  } catch (const std::logic_error&) {
    bad();
  }
  return {name, rule};
}

std::optional<TopK> postprocess_rule(const PostprocessRules& rules, std::string_view name) {
  for (const auto& [key, rule] : rules)
    if (key == name) return rule;
  for (const auto& [key, rule] : rules)
    if (key.empty()) return rule;
  return std::nullopt;
}

void postprocess(IterationResult& result, const PostprocessRules& rules) {
  if (rules.empty()) return;
  for (auto& [name, tensor] : result.outputs)
    if (auto rule = postprocess_rule(rules, name))
      tensor = with_context(fmt::format("--postprocess: output '{}'", name),
                            [&] { return top_k_indices(tensor, rule->k, rule->axis); });
}

}  // namespace parity::compare
