// `parity surgeon weight-strip`: remove the data of a model's weights, keeping names, dtypes and
// dims, in Polygraphy's format (doc_string "TRT_WEIGHTLESS/" or "TRT_WEIGHTLESS/SPARSE_2_4"), so
// the file is interchangeable with Polygraphy's and TensorRT's weightless flows.
#include <cctype>
#include <set>
#include <sstream>

#include "args/model_args.h"
#include "args/model_save_args.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/onnx/weight_strip.h"

namespace parity::cli {
namespace {

class SurgeonWeightStripCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"surgeon", "weight-strip"}; }
  std::string description() const override { return "Strip weights from the provided ONNX model"; }
  void add_options(CLI::App& app) override {
    model_.add_to(app, /*shape_inference_by_default=*/false);
    app.add_option("-o,--output", output_, "Path to save the stripped model")->required()->group("ONNX Model Saving");
    save_.add_to(app);
    app.add_option("--exclude-list", exclude_list_,
                   "Path to a text file listing initializers not to strip, one name a line")
        ->group("Weight Stripping");
  }

  int run() override {
    return run_with_verdict([&] {
      // Read before the model, so a missing list fails before any work.
      std::set<std::string> exclude;
      if (!exclude_list_.empty()) {
        std::istringstream lines(read_file(exclude_list_));
        for (std::string line; std::getline(lines, line);) {
          while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
          exclude.insert(line);
        }
      }
      onnx::Model model = model_.load();
      onnx::strip_weights(model, exclude);
      save_.save(model, output_);
      return true;
    });
  }

 private:
  ModelArgs model_;
  ModelSaveArgs save_;
  std::string output_;
  std::string exclude_list_;
};

PARITY_REGISTER_COMMAND(SurgeonWeightStripCommand);

}  // namespace
}  // namespace parity::cli
