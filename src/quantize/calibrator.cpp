#include "parity/quantize/calibrator.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "parity/core/error.h"
#include "parity/core/feed_stream.h"
#include "parity/core/logger.h"

namespace parity::quantize {

float scale_of_amax(double amax) {
  return amax > 0 ? static_cast<float>(amax / 127.0) : 1.0f;
}

namespace {

// At most this many feeds per stack, and as many as keep the stack's largest calibrated activation
// within kStackBytes: past a core's cache (1-2 MiB of L2 per core on current x86 server CPUs) each op
// of a stack streams its activations through memory, while the per-inference overhead that stacking
// saves is paid off by a few feeds already.
constexpr std::size_t kStackedFeeds = 16;
constexpr std::size_t kStackBytes = std::size_t{1} << 20;

void check_batch_names(const NamedTensors& batch, const TensorMetadata& inputs, std::size_t index) {
  std::set<std::string> given, expected;
  for (const auto& [name, tensor] : batch) given.insert(name);
  for (const auto& [name, info] : inputs) expected.insert(name);
  if (given == expected) return;
  raise<InvalidInputError>("calibration batch {} has input(s) {} but the model's inputs are {}", index,
                           fmt::join(given, ", "), fmt::join(expected, ", "));
}

// Whether feeds can be stacked along axis 0 into one inference: every input's leading dimension is
// the same named dynamic dimension (the batch) and no input holds strings.
bool stackable(const TensorMetadata& inputs) {
  std::string symbol;
  for (const auto& [name, info] : inputs) {
    if (!info.shape || info.shape->empty() || info.dtype == DType::kString) return false;
    const Dim& leading = info.shape->front();
    if (leading.is_fixed() || leading.symbol.empty()) return false;
    if (symbol.empty()) symbol = leading.symbol;
    if (leading.symbol != symbol) return false;
  }
  return !symbol.empty();
}

// Whether `b` stacks onto `a`: the same inputs in the same order, with the same dtypes and the same
// dimensions after the first.
bool stacks_onto(const NamedTensors& a, const NamedTensors& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const Tensor& x = a[i].second;
    const Tensor& y = b[i].second;
    if (a[i].first != b[i].first || x.dtype() != y.dtype() || x.rank() < 1 || x.rank() != y.rank() ||
        !std::equal(x.shape().begin() + 1, x.shape().end(), y.shape().begin() + 1))
      return false;
  }
  return true;
}

NamedTensors stack(std::span<const NamedTensors> feeds) {
  NamedTensors stacked;
  for (std::size_t i = 0; i < feeds.front().size(); ++i) {
    Shape shape = feeds.front()[i].second.shape();
    shape[0] = 0;
    for (const auto& feed : feeds) shape[0] += feed[i].second.shape()[0];
    Tensor tensor = Tensor::uninitialized(feeds.front()[i].second.dtype(), shape);
    auto* out = static_cast<std::byte*>(tensor.mutable_raw());
    for (const auto& feed : feeds) {
      std::memcpy(out, feed[i].second.raw(), feed[i].second.byte_size());
      out += feed[i].second.byte_size();
    }
    stacked.emplace_back(feeds.front()[i].first, std::move(tensor));
  }
  return stacked;
}

// Whether each element of `single` equals the element of `stacked` at its index within the
// tolerance below (both NaN, or the same infinity, count as equal).
//
// A stack of feeds is a different batch size, for which ONNX Runtime may pick other kernels (another
// GEMM blocking, another split of a reduction over threads), so float sums come out in another order:
// an element differs by a few float32 epsilons of the terms summed into it, which can be large beside
// an element that cancels to near zero. Hence a relative tolerance of 1e-5 (about 80 epsilons) plus
// an absolute one of 1e-5 of the tensor's largest |x|, the size of the terms of its sums. Samples mixed
// across the batch change values by the order of the data itself (another mean subtracted, another
// row read), far beyond both; a mixing small enough to pass them moves a min-max scale by about 1e-5
// of itself at most.
bool equal_within_tolerance(std::span<const float> single, std::span<const float> stacked) {
  constexpr double kRelative = 1e-5;
  constexpr double kOfLargest = 1e-5;
  double largest = 0;
  for (float x : single)
    if (std::isfinite(x)) largest = std::max(largest, std::fabs(static_cast<double>(x)));
  const double absolute = kOfLargest * largest;
  for (std::size_t i = 0; i < single.size(); ++i) {
    const double a = single[i], b = stacked[i];
    if (!std::isfinite(a) || !std::isfinite(b)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b) return false;
      continue;
    }
    if (std::fabs(a - b) > kRelative * std::fabs(a) + absolute) return false;
  }
  return true;
}

// The first calibrated activation whose values for the first feed differ between `single` (that
// feed's inference alone) and `stacked` (the inference of a stack that begins with it), or none.
// A per-sample activation's leading dimension grows with the stack's inputs' (from `single_rows`
// to `stacked_rows`) and its first slice is the single run's output; anything else (a leading
// dimension that stays, another shape, other values) reads several samples of the batch at once.
std::optional<std::string> first_mixing_activation(const NamedTensors& single, const NamedTensors& stacked,
                                                   int64_t single_rows, int64_t stacked_rows,
                                                   const std::set<std::string>& calibrated) {
  for (const auto& [name, s] : stacked) {
    if (!calibrated.count(name) || s.dtype() != DType::kFloat32) continue;
    const auto one = std::find_if(single.begin(), single.end(), [&](const auto& named) { return named.first == name; });
    if (one == single.end()) return name;
    const Tensor& t = one->second;
    if (t.dtype() != DType::kFloat32 || t.rank() < 1 || t.rank() != s.rank() ||
        s.shape()[0] * single_rows != t.shape()[0] * stacked_rows ||
        !std::equal(t.shape().begin() + 1, t.shape().end(), s.shape().begin() + 1) ||
        !equal_within_tolerance(t.span<float>(), s.span<float>().first(t.span<float>().size())))
      return name;
  }
  return std::nullopt;
}

// How many feeds a stack holds: kStackBytes over the bytes of the largest calibrated activation of one
// feed's run (`single`), between 1 and kStackedFeeds.
std::size_t feeds_per_stack(const NamedTensors& single, const std::set<std::string>& calibrated) {
  std::size_t largest = 1;
  for (const auto& [name, tensor] : single)
    if (calibrated.count(name)) largest = std::max(largest, tensor.byte_size());
  return std::clamp<std::size_t>(kStackBytes / largest, 1, kStackedFeeds);
}

// Consecutive feeds of the data loader's, from its feed `begin` on, run as one inference (a stack; one
// feed when not stacked).
struct FeedRange {
  std::size_t begin = 0;
  std::vector<NamedTensors> feeds;
  std::size_t end() const { return begin + feeds.size(); }
};

// Takes the stream's feeds (each checked against the model's inputs) and cuts them, as they are asked
// for, into ranges of consecutive feeds that stack onto the first of their range: a feed that does
// not stack onto a range begins the next one. Used by one thread at a time.
class RangeCutter {
 public:
  RangeCutter(FeedStream& stream, const TensorMetadata& inputs) : stream_(stream), inputs_(inputs) {}

  // The next feed with its index in the data loader's order, or nullopt when there are no more.
  std::optional<std::pair<std::size_t, NamedTensors>> next_feed() {
    if (!held_.empty()) {
      auto feed = std::move(held_.front());
      held_.erase(held_.begin());
      return feed;
    }
    if (ended_) return std::nullopt;
    std::optional<NamedTensors> feed = stream_.next();
    if (!feed) {
      ended_ = true;
      return std::nullopt;
    }
    check_batch_names(*feed, inputs_, taken_);
    return std::pair{taken_++, std::move(*feed)};
  }

  // Feeds taken and not used, handed out again first, in this order.
  void put_back(std::vector<std::pair<std::size_t, NamedTensors>> feeds) {
    held_.insert(held_.begin(), std::make_move_iterator(feeds.begin()), std::make_move_iterator(feeds.end()));
  }

  // At most `limit` feeds that stack onto the first; nullopt when there are no more feeds.
  std::optional<FeedRange> next_range(std::size_t limit) {
    auto first = next_feed();
    if (!first) return std::nullopt;
    FeedRange range{first->first, {}};
    range.feeds.push_back(std::move(first->second));
    while (range.feeds.size() < limit) {
      auto feed = next_feed();
      if (!feed) break;
      if (!stacks_onto(range.feeds.front(), feed->second)) {
        held_.insert(held_.begin(), std::move(*feed));
        break;
      }
      range.feeds.push_back(std::move(feed->second));
    }
    return range;
  }

  // Feeds taken from the stream so far.
  std::size_t taken() const { return taken_; }

 private:
  FeedStream& stream_;
  const TensorMetadata& inputs_;
  std::vector<std::pair<std::size_t, NamedTensors>> held_;
  std::size_t taken_ = 0;
  bool ended_ = false;
};

}  // namespace

CalibrationResult calibrate(std::span<runtime::Runner* const> runners, const std::vector<std::string>& tensors,
                            FeedStream& batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (runners.empty()) raise<InternalError>("calibrate: no runner");
  CalibrationResult result;
  for (const auto& name : tensors) result.histograms[name];
  // Folds `tensor`, the activation of `rows[0] + rows[1] + ...` samples (one feed's rows each, in
  // order), into its statistics. A histogram takes one feed's share at a time, as where the feeds run
  // one at a time (its range is set by the first share it sees), so the stack size does not change
  // its bins and stacking changes them only by the float rounding of the stacked kernels; the shares
  // are the tensor cut in proportion to the rows where that cuts between elements, else the tensor
  // is taken whole. The largest |x| takes the whole tensor.
  auto fold = [&](const std::string& name, const Tensor& tensor, std::span<const int64_t> rows) {
    auto it = result.histograms.find(name);
    if (it == result.histograms.end() || tensor.dtype() != DType::kFloat32) return;
    const std::span<const float> values = tensor.span<float>();
    if (settings.algo == CalibrationAlgo::kMinMax) {
      it->second.add_max_only(values);
      return;
    }
    int64_t total = 0;
    for (int64_t r : rows) total += r;
    const auto size = static_cast<int64_t>(values.size());
    bool cuts = rows.size() > 1 && total > 0;
    std::vector<std::size_t> edges{0};
    int64_t before = 0;
    for (std::size_t i = 0; cuts && i < rows.size(); ++i) {
      before += rows[i];
      if ((size * before) % total != 0) cuts = false;
      edges.push_back(static_cast<std::size_t>(size * before / total));
    }
    if (!cuts) {
      it->second.add(values);
      return;
    }
    for (std::size_t i = 0; i + 1 < edges.size(); ++i)
      it->second.add(values.subspan(edges[i], edges[i + 1] - edges[i]));
  };

  struct Deactivation {
    std::span<runtime::Runner* const> runners;
    ~Deactivation() {
      for (auto* runner : runners)
        if (runner->is_active()) runner->deactivate();
    }
  } deactivation{runners};
  for (auto* runner : runners)
    if (!runner->is_active()) runner->activate();
  const TensorMetadata inputs = runners.front()->input_metadata();
  std::vector<std::string> marked;
  std::set<std::string> input_names;
  for (const auto& [name, info] : inputs) input_names.insert(name);
  for (const auto& name : tensors)
    if (!input_names.count(name) && !returned.count(name)) marked.push_back(name);
  // The marked tensors come back with each batch's outputs (one batch's at a time); a tensor
  // callback would make ONNX Runtime return every tensor of the graph.
  for (auto* runner : runners) runner->set_intermediate_outputs(runtime::IntermediateOutputs::list(marked));

  const std::optional<std::size_t> total = batches.size();
  auto last_log = start;
  auto log_progress = [&](std::size_t done, bool last) {
    std::size_t seen = 0;
    for (const auto& [name, histogram] : result.histograms) seen += histogram.count() > 0;
    if (last || total)
      log::info("Calibrating: {}/{} batches, {}/{} tensors seen", done, last ? done : *total, seen, tensors.size());
    else
      log::info("Calibrating: {} batches so far (the data loader is still giving them), {}/{} tensors seen", done,
                seen, tensors.size());
  };
  // Folds a range's feeds given their outputs: graph inputs from the feeds, the rest from the outputs,
  // each once (an input returned as a graph output is not counted twice).
  std::size_t done = 0;
  auto fold_range = [&](const FeedRange& range, const NamedTensors& outputs) {
    std::vector<int64_t> rows;
    for (const auto& feed : range.feeds) {
      const Tensor& first_input = feed.front().second;
      rows.push_back(first_input.rank() > 0 ? first_input.shape()[0] : 1);
      for (const auto& [name, tensor] : feed) fold(name, tensor, {});
    }
    std::set<std::string> folded;
    for (const auto& [name, tensor] : outputs)
      if (!input_names.count(name) && folded.insert(name).second) fold(name, tensor, rows);
    result.batches += static_cast<int64_t>(range.feeds.size());
    done = range.end();
    const auto now = Clock::now();
    if (now - last_log >= std::chrono::seconds(1)) {
      log_progress(done, false);
      last_log = now;
    }
  };

  // The feeds are taken from the stream as the runners ask for them, so only the feeds being run (and
  // the one that began the next range) are held. The first feed runs alone on the first runner: its
  // activations size the stacks.
  RangeCutter cutter(batches, inputs);
  auto first = cutter.next_feed();
  if (!first) raise<InvalidInputError>("calibration: the data loader gave no batches");
  runtime::Runner& first_runner = *runners.front();
  std::set<std::string> calibrated;
  for (const auto& name : tensors)
    if (!input_names.count(name)) calibrated.insert(name);
  std::optional<NamedTensors> first_single = first_runner.infer(first->second);
  std::size_t stack_limit = stackable(inputs) ? feeds_per_stack(*first_single, calibrated) : 1;
  // A runner that marks tensors prepares its model with them marked at its first inference, which may
  // fork a child process (ONNX shape inference): the other runners make theirs here, one at a time,
  // before the workers' threads exist (a fork while other threads run can leave the child waiting on a
  // lock one of them held). Runners given a model that returns the tensors (quantize_model's) mark none.
  if (!marked.empty())
    for (std::size_t r = 1; r < runners.size(); ++r) runners[r]->infer(first->second);
  {
    std::vector<std::pair<std::size_t, NamedTensors>> back;
    back.push_back(std::move(*first));
    cutter.put_back(std::move(back));
  }

  // Each worker, on its own runner, takes the next range from the stream and runs it; the outputs are
  // folded in the order of the ranges (a histogram's range is set by the first batch it sees), one fold
  // at a time while the other workers' inferences run, so the statistics are those of one runner going
  // through the batches in order.
  //
  // Stacking changes no activation's values per sample only where the model computes each sample on
  // its own: a stack taken before that is known is checked against its first feed run alone (that
  // run's outputs stand for the feed when the check fails, and are not counted when it passes: the
  // stack counts them). When one fails, the feeds run one at a time from then on.
  enum class Stacking { kUnchecked, kChecked, kMixes };
  Stacking stacking = stack_limit > 1 ? Stacking::kUnchecked : Stacking::kChecked;
  std::mutex source_mutex;  // the cutter, the stacking verdict, first_single
  std::mutex mutex;         // folding
  std::condition_variable folded_one;
  std::size_t ranges_taken = 0;
  std::size_t next_to_fold = 0;
  std::exception_ptr failure;
  std::atomic<bool> failed = false;
  std::atomic<bool> logged_unstacking = false;
  auto run_one_at_a_time = [&](runtime::Runner& runner, FeedRange& range, std::size_t from,
                               std::vector<std::pair<FeedRange, NamedTensors>>& runs) {
    for (std::size_t i = from; i < range.feeds.size(); ++i) {
      FeedRange one{range.begin + i, {}};
      one.feeds.push_back(std::move(range.feeds[i]));
      NamedTensors outputs = runner.infer(one.feeds.front());
      runs.emplace_back(std::move(one), std::move(outputs));
    }
  };
  auto work = [&](runtime::Runner& runner) {
    try {
      while (!failed) {
        std::size_t index;
        std::optional<FeedRange> range;
        bool check = false;
        std::optional<NamedTensors> single;
        {
          std::lock_guard lock(source_mutex);
          range = cutter.next_range(stacking == Stacking::kMixes ? 1 : stack_limit);
          if (!range) return;
          index = ranges_taken++;
          check = range->feeds.size() > 1 && stacking == Stacking::kUnchecked;
          if (range->begin == 0 && first_single) single = std::move(first_single), first_single.reset();
        }
        // A range's inferences: the stack, or its feeds one at a time where the stack fails to run or
        // mixes the samples.
        std::vector<std::pair<FeedRange, NamedTensors>> runs;
        if (range->feeds.size() == 1) {
          NamedTensors outputs = single ? std::move(*single) : runner.infer(range->feeds.front());
          runs.emplace_back(std::move(*range), std::move(outputs));
        } else {
          std::optional<NamedTensors> stacked;
          try {
            stacked = runner.infer(stack(range->feeds));
          } catch (const Error& error) {
            if (!logged_unstacking.exchange(true))
              log::info(
                  "calibration: {} feeds stacked along the batch dimension fail to run ({}); running the feeds "
                  "one at a time",
                  range->feeds.size(), error.what());
          }
          if (stacked && check) {
            if (!single) single = runner.infer(range->feeds.front());
            int64_t stacked_rows = 0;
            for (const auto& feed : range->feeds) stacked_rows += feed.front().second.shape()[0];
            const auto mixing = first_mixing_activation(*single, *stacked, range->feeds.front().front().second.shape()[0],
                                                        stacked_rows, calibrated);
            std::lock_guard lock(source_mutex);
            if (mixing) {
              if (stacking != Stacking::kMixes)
                log::info("calibration: feeds are run one at a time: tensor '{}' mixes the samples of a batch", *mixing);
              stacking = Stacking::kMixes;
              stacked.reset();
            } else if (stacking == Stacking::kUnchecked) {
              stacking = Stacking::kChecked;
              log::verbose(
                  "calibration: up to {} feeds stacked into one inference (the first stack's activations "
                  "equal its first feed's run alone)",
                  stack_limit);
            }
          }
          if (stacked) {
            runs.emplace_back(std::move(*range), std::move(*stacked));
          } else {
            std::size_t from = 0;
            if (single) {
              FeedRange one{range->begin, {}};
              one.feeds.push_back(std::move(range->feeds.front()));
              runs.emplace_back(std::move(one), std::move(*single));
              from = 1;
            }
            run_one_at_a_time(runner, *range, from, runs);
          }
        }
        {
          std::unique_lock lock(mutex);
          folded_one.wait(lock, [&] { return failed || next_to_fold == index; });
          if (failed) return;
          for (const auto& [part, outputs] : runs) fold_range(part, outputs);
          ++next_to_fold;
        }
        folded_one.notify_all();
        // The feeds and outputs are released here, outside the locks.
      }
    } catch (...) {
      {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        failed = true;
      }
      folded_one.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t w = 1; w < runners.size(); ++w) threads.emplace_back(work, std::ref(*runners[w]));
  work(first_runner);
  for (auto& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
  for (auto* runner : runners) runner->set_intermediate_outputs(runtime::IntermediateOutputs::none());
  log_progress(done, true);

  for (const auto& name : tensors) {
    const AbsHistogram& histogram = result.histograms.at(name);
    if (histogram.count() == 0)
      raise<InvalidInputError>(
          "calibration: no batch reached tensor '{}' ({} batch(es) run): it holds no values; "
          "exclude its consumers with --keep-fp32",
          name, result.batches);
    if (histogram.non_finite())
      log::warning("calibration: tensor '{}' had {} NaN or infinite value(s), left out of its statistics", name,
                   histogram.non_finite());
    const double amax = amax_from(histogram, settings);
    if (amax == 0)
      log::warning(
          "calibration: tensor '{}' was zero in every batch; its scale is 1 (a scale of 0 would divide "
          "by zero)",
          name);
    result.amax[name] = amax;
    result.scales[name] = scale_of_amax(amax);
  }
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

CalibrationResult calibrate(std::span<runtime::Runner* const> runners, const std::vector<std::string>& tensors,
                            std::span<const NamedTensors> batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned) {
  auto stream = feed_stream_of(std::vector<NamedTensors>(batches.begin(), batches.end()));
  return calibrate(runners, tensors, *stream, settings, returned);
}

CalibrationResult calibrate(runtime::Runner& runner, const std::vector<std::string>& tensors,
                            std::span<const NamedTensors> batches, const CalibrationSettings& settings,
                            const std::set<std::string>& returned) {
  runtime::Runner* const runners[] = {&runner};
  return calibrate(runners, tensors, batches, settings, returned);
}

}  // namespace parity::quantize
