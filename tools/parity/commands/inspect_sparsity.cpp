// `parity inspect sparsity`: whether each weight of an ONNX model follows 2:4 structured sparsity
// (Polygraphy's inspect sparsity): one "Found sparse tensor" or "Found non-sparse tensor" line each.
#include "args/model_args.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/onnx/sparsity.h"

namespace parity::cli {
namespace {

class InspectSparsityCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"inspect", "sparsity"}; }
  std::string description() const override {
    return "[EXPERIMENTAL] Display whether each weight tensor of an ONNX model follows a 2:4 structured sparsity "
           "pattern";
  }
  void add_options(CLI::App& app) override { model_.add_to(app, /*shape_inference_by_default=*/false); }

  int run() override {
    return run_with_verdict([&] {
      onnx::Model model = model_.load();
      onnx::check_sparsity(model);
      return true;
    });
  }

 private:
  ModelArgs model_;
};

PARITY_REGISTER_COMMAND(InspectSparsityCommand);

}  // namespace
}  // namespace parity::cli
