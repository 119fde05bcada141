// `parity run --fp-to-fp16 / --fp-to-bf16`: the first runner runs the float32 model, the reference;
// the others the model converted as `convert --fp-to-fp16/--fp-to-bf16` converts it with its default
// keep list (docs/reduced-precision.md). With --attribute, each node alone is converted the same way
// on the runner under test (its float16/bfloat16 version, fed the reference's values cast to it).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

#include "args/model_args.h"
#include "args/runner_args.h"
#include "parity/onnx/model.h"
#include "parity/onnx/reduced_precision.h"

namespace parity::cli {

class ReducedPrecisionRunArgs {
 public:
  void add_to(CLI::App& app);
  bool enabled() const { return fp16_ || bf16_; }
  // DType::kFloat16 or kBFloat16 (kUndefined when neither flag is given).
  DType dtype() const { return bf16_ ? DType::kBFloat16 : fp16_ ? DType::kFloat16 : DType::kUndefined; }

  // Refuses the flags with --int8 (another model under test) or --dataset (which runs the model as it is).
  void check(bool int8, bool dataset) const;

  // Every runner after the first (command-line order) is made again on the converted model and its
  // name ends in -fp16/-bf16; a single runner runs the converted model (compared with --load-outputs,
  // if given).
  void convert_runners_under_test(std::vector<std::unique_ptr<runtime::Runner>>& live, const RunnerArgs& runners,
                                  const ModelArgs& model_args) const;
  // Converts a model of the float model's nodes as the runners under test got theirs (for the
  // attribution's batches); nullptr when neither flag is given.
  std::function<void(onnx::Model&)> converter() const;

 private:
  onnx::ReducedPrecisionOptions options() const;

  bool fp16_ = false;
  bool bf16_ = false;
};

}  // namespace parity::cli
