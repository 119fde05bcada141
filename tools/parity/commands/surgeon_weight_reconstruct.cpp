// `parity surgeon weight-reconstruct`: give a weight-stripped model (Polygraphy's or Parity's
// `weight-strip`) random proxy weights of the stripped dtypes and shapes; weights stripped with the
// SPARSE_2_4 flag are pruned back to 2:4 structured sparsity.
#include <random>

#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/core/logger.h"
#include "parity/onnx/weight_strip.h"

namespace parity::cli {
namespace {

class SurgeonWeightReconstructCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"surgeon", "weight-reconstruct"}; }
  std::string description() const override { return "Reconstruct proxy weights in the stripped ONNX model"; }
  void add_options(CLI::App& app) override {
    model_.add_to(app, /*shape_inference_by_default=*/false);
    app.add_option("-o,--output", output_, "Path to save the reconstructed model")
        ->required()
        ->group("ONNX Model Saving");
    save_.add_to(app);
  }

  int run() override {
    return run_with_verdict([&] {
      // Stripped initializers have no data: the load does not check tensors' data against their dims
      // (reconstruct_weights checks the unmarked ones).
      onnx::LoadOptions options;
      options.check_dims_and_data = false;
      onnx::Model model = model_.load(options);
      std::mt19937_64 random(std::random_device{}());
      onnx::reconstruct_weights(model, random);
      save_.save(model, output_);
      return true;
    });
  }

 private:
  ModelArgs model_;
  ModelSaveArgs save_;
  std::string output_;
};

PARITY_REGISTER_COMMAND(SurgeonWeightReconstructCommand);

}  // namespace
}  // namespace parity::cli
