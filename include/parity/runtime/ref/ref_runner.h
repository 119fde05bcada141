// `--ref`: Parity's reference interpreter as a runner: plain, exact kernels for every ONNX op,
// optional float64 computation ("more golden" reference).
#pragma once

#include <memory>

#include "parity/ops/kernel.h"
#include "parity/runtime/loader.h"
#include "parity/runtime/runner.h"

namespace parity::runtime {

class Interpreter;

struct RefOptions {
  bool fp64 = false;  // --ref-precision fp64
  ops::ExecutionLimits limits;
};

class RefRunner : public Runner {
 public:
  explicit RefRunner(ModelLoader loader, RefOptions options = {});
  ~RefRunner() override;

  ModelLoader source_model() const override { return loader_; }
  std::unique_ptr<Runner> with_model(ModelLoader model) const override {
    return std::make_unique<RefRunner>(std::move(model), options_);
  }

 protected:
  void activate_impl() override;
  void deactivate_impl() override;
  TensorMetadata input_metadata_impl() override;
  NamedTensors infer_impl(const NamedTensors& feed) override;

 private:
  ModelLoader loader_;
  RefOptions options_;
  std::unique_ptr<Interpreter> interpreter_;
};

}  // namespace parity::runtime
