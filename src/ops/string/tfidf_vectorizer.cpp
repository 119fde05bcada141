// TfIdfVectorizer: counts the pool's n-grams (with skips) in each row of X and weighs them
// (TF: counts, IDF: weight where present, TFIDF: count * weight). weights[k] belongs to the
// pool's k-th n-gram, written to column ngram_indexes[k].
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "parity/ops/dispatch.h"
#include "parity/ops/kernel.h"

namespace parity::ops {
namespace {

template <typename K>
struct NgramPool {
  std::map<std::vector<K>, int64_t> index;  // n-gram -> its position k in the pool
  std::vector<int64_t> columns;              // position k -> output column
  int64_t max_n = 0;
};

template <typename K>
NgramPool<K> build_pool(const KernelContext& ctx, const std::vector<K>& pool, const std::vector<int64_t>& counts,
                        const std::vector<int64_t>& indexes, int64_t width) {
  NgramPool<K> p;
  std::size_t gram = 0;
  const auto total = static_cast<int64_t>(pool.size());
  for (std::size_t level = 0; level < counts.size(); ++level) {
    const int64_t n = static_cast<int64_t>(level) + 1;
    const int64_t start = counts[level];
    const int64_t end = level + 1 < counts.size() ? counts[level + 1] : total;
    if (start < 0 || end > total || start > end) ctx.fail("ngram_counts {} is out of range of the pool", start);
    if ((end - start) % n != 0)
      ctx.fail("pool section of {}-grams has {} items, not a multiple of {}", n, end - start, n);
    for (int64_t k = start; k < end; k += n, ++gram) {
      if (gram >= indexes.size())
        ctx.fail("ngram_indexes has {} entries, fewer than the pool's n-grams", indexes.size());
      const int64_t col = indexes[gram];
      if (col < 0 || col >= width) ctx.fail("ngram_indexes value {} is out of range", col);
      p.index.emplace(std::vector<K>(pool.begin() + k, pool.begin() + k + n), static_cast<int64_t>(gram));
      p.columns.push_back(col);
      p.max_n = std::max(p.max_n, n);
    }
  }
  return p;
}

template <typename K>
void count_row(const K* row, int64_t len, const NgramPool<K>& pool, int64_t min_n, int64_t max_n, int64_t max_skip,
               std::vector<double>& counts) {
  std::vector<K> key;
  for (int64_t n = min_n; n <= max_n; ++n) {
    // Unigrams have no gaps: count them once, not once per skip value.
    const int64_t skips = n == 1 ? 0 : max_skip;
    for (int64_t skip = 0; skip <= skips; ++skip) {
      const int64_t step = skip + 1;
      for (int64_t start = 0; start + (n - 1) * step < len; ++start) {
        key.clear();
        for (int64_t k = 0; k < n; ++k) key.push_back(row[start + k * step]);
        auto it = pool.index.find(key);
        if (it != pool.index.end()) counts[static_cast<std::size_t>(it->second)] += 1.0;
      }
    }
  }
}

void tfidf_vectorizer(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.rank() != 1 && x.rank() != 2) ctx.fail("X must be 1-D or 2-D, found shape {}", shape_to_string(x.shape()));
  const int64_t min_n = ctx.attr_int("min_gram_length");
  const int64_t max_n = ctx.attr_int("max_gram_length");
  const int64_t max_skip = ctx.attr_int("max_skip_count");
  if (min_n < 1 || max_n < min_n)
    ctx.fail("need 1 <= min_gram_length <= max_gram_length, found {} and {}", min_n, max_n);
  if (max_skip < 0) ctx.fail("max_skip_count must be >= 0, found {}", max_skip);
  const std::string mode = ctx.attr_string("mode");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") ctx.fail("mode must be TF, IDF or TFIDF, found '{}'", mode);
  const std::vector<int64_t> counts = ctx.attr_ints("ngram_counts");
  const std::vector<int64_t> indexes = ctx.attr_ints("ngram_indexes");
  std::vector<float> weights = ctx.has_attribute("weights") ? ctx.attr_floats("weights") : std::vector<float>{};
  int64_t width = 0;
  for (int64_t v : indexes) width = std::max(width, v + 1);
  if (!weights.empty() && weights.size() < indexes.size())
    ctx.fail("weights has {} entries, expected {} (one per n-gram)", weights.size(), indexes.size());

  const int64_t rows = x.rank() == 2 ? x.shape()[0] : 1;
  const int64_t len = x.rank() == 2 ? x.shape()[1] : x.shape()[0];
  Tensor& y = ctx.allocate_output(0, DType::kFloat32, x.rank() == 2 ? Shape{rows, width} : Shape{width});
  float* out = y.mutable_data<float>();

  auto run = [&]<typename K>(const auto& pool, const K* data) {
    std::vector<double> c(pool.columns.size());
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(c.begin(), c.end(), 0.0);
      count_row<K>(data + r * len, len, pool, min_n, std::min(max_n, std::max<int64_t>(pool.max_n, 0)), max_skip, c);
      for (std::size_t k = 0; k < c.size(); ++k) {
        const double w = weights.empty() ? 1.0 : weights[k];
        double v = c[k];
        if (mode == "IDF") v = v > 0 ? w : 0.0;
        else if (mode == "TFIDF") v = v * w;
        out[r * width + pool.columns[k]] += static_cast<float>(v);
      }
    }
  };

  if (x.dtype() == DType::kString) {
    std::vector<std::string> pool = ctx.attr_strings("pool_strings");
    if (pool.empty()) ctx.fail("string input needs the 'pool_strings' attribute");
    auto p = build_pool<std::string>(ctx, pool, counts, indexes, width);
    run.template operator()<std::string>(p, x.data<std::string>());
  } else if (x.dtype() == DType::kInt32 || x.dtype() == DType::kInt64) {
    if (!ctx.has_attribute("pool_int64s")) ctx.fail("integer input needs the 'pool_int64s' attribute");
    std::vector<int64_t> pool = ctx.attr_ints("pool_int64s");
    auto p = build_pool<int64_t>(ctx, pool, counts, indexes, width);
    std::vector<int64_t> data(static_cast<std::size_t>(x.size()));
    for (int64_t i = 0; i < x.size(); ++i)
      data[static_cast<std::size_t>(i)] = x.dtype() == DType::kInt32 ? x.data<int32_t>()[i] : x.data<int64_t>()[i];
    run.template operator()<int64_t>(p, data.data());
  } else {
    ctx.fail("X must be string, int32 or int64, found {}", dtype_name(x.dtype()));
  }
}

}  // namespace

PARITY_KERNEL("", "TfIdfVectorizer", 9, tfidf_vectorizer);

}  // namespace parity::ops
