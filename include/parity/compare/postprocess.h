// Postprocessing applied to results before comparison (Polygraphy's PostprocessFunc and the
// `--postprocess [out:]top-K[,axis=A]` flag).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parity/compare/compare_func.h"

namespace parity::compare {

// Indices (int64) of the k largest values along `axis` (negative counts from the end), as
// Polygraphy's util.array.topk: numpy's stable argsort of -x (NaN last; unsigned values negate
// modulo 2^bits as numpy does), k clamped to the axis length. Throws InvalidInputError for a bad
// axis or a dtype that cannot be negated (bool, string).
Tensor top_k_indices(const TensorView& tensor, int64_t k, int64_t axis = -1);

// One --postprocess entry: an output name ("" for every output) and top-K on an axis.
struct TopK {
  int64_t k = 0;
  int64_t axis = -1;
};
using PostprocessRules = std::vector<std::pair<std::string, TopK>>;

// Parses "top-5", "top-5,axis=1", "out:top-3" (the last ':' splits the name); InvalidInputError.
std::pair<std::string, TopK> parse_postprocess(std::string_view text);

// The rule for `name` (exact entry, else the "" entry), if any.
std::optional<TopK> postprocess_rule(const PostprocessRules& rules, std::string_view name);

// Applies the rules to every output of every iteration in place.
void postprocess(IterationResult& result, const PostprocessRules& rules);

}  // namespace parity::compare
