// `parity surgeon prune`: force 2:4 structured sparsity on a model's weights (Polygraphy's surgeon
// prune): in each run of 4 values along the reduction axis, the two smallest magnitudes become zero.
// For functional tests of sparse kernels only: accuracy is not considered.
#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/core/logger.h"
#include "parity/onnx/sparsity.h"

namespace parity::cli {
namespace {

class SurgeonPruneCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"surgeon", "prune"}; }
  std::string description() const override {
    return "[EXPERIMENTAL] Prune the weights of a model to follow a 2:4 structured sparsity pattern without regard "
           "for accuracy";
  }
  void add_options(CLI::App& app) override {
    model_.add_to(app, /*shape_inference_by_default=*/false);
    app.add_option("-o,--output", output_, "Path to save the pruned model")->required()->group("ONNX Model Saving");
    save_.add_to(app);
  }

  int run() override {
    return run_with_verdict([&] {
      onnx::Model model = model_.load();
      onnx::prune_sparsity(model);
      save_.save(model, output_);
      return true;
    });
  }

 private:
  ModelArgs model_;
  ModelSaveArgs save_;
  std::string output_;
};

PARITY_REGISTER_COMMAND(SurgeonPruneCommand);

}  // namespace
}  // namespace parity::cli
