// `parity inspect capability model.onnx --openvino|--onnxrt [-o folder]` (Polygraphy's `inspect
// capability` with --with-partitioning): which nodes OpenVINO can run, the graph split into maximal
// supported and unsupported subgraphs in topological order, each saved as a model under
// Polygraphy's names (supported_subgraph-nodes-A-B.onnx, unsupported_subgraph-nodes-C-D.onnx), and
// a summary of the unsupported ops with OpenVINO's reasons (also saved as results.txt). The work is
// the library's (parity/runtime/capability.h); the command parses flags and writes files.
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <system_error>

#include <fmt/format.h>

#include "args/model_args.h"
#include "args/tensor_meta_parse.h"
#include "args/value_parsing.h"
#include "command.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"
#include "parity/debug/search_html_report.h"
#include "parity/onnx/node_range.h"
#include "parity/onnx/passes.h"
#include "parity/runtime/backend_registry.h"
#include "parity/runtime/capability.h"
#include "parity/runtime/data_loader.h"
#include "parity/runtime/passes/fallback_shape_inference.h"

namespace parity::cli {
namespace {

namespace fs = std::filesystem;

class InspectCapabilityCommand : public Command {
 public:
  std::vector<std::string> path() const override { return {"inspect", "capability"}; }
  std::string description() const override {
    return "Determine which parts of an ONNX model a backend can run: the graph is partitioned "
           "into supported and unsupported subgraphs, saved as models, with a summary of the "
           "unsupported nodes and the backend's reasons";
  }
  void add_options(CLI::App& app) override {
    model_.add_to(app, /*shape_inference_by_default=*/true);
    app.add_option("--input-shapes,--inputs", input_shapes_,
                   "Input shapes, as run takes them: <name>:[d0,d1,...] ...; the model's inputs get these shapes "
                   "before it is partitioned (shapes inferred from them)")
        ->group("Model");
    for (const runtime::BackendDescriptor& backend : query_backends())
      app.add_flag("--" + backend.name, asked_[backend.name], backend.support_query_help)->group("Backend");
    app.add_option("-o,--output", output_,
                   "Folder for the subgraphs and results.txt (default: parity_capability_dumps); "
                   "files of the same names there are replaced")
        ->group("Save");
    app.add_option("--report-html", report_html_,
                   "Write the answer as one self-contained HTML page (no network requests): each subgraph with its "
                   "verdict and the unsupported nodes with the backend's reasons (docs/pictures.md)")
        ->group("Save");
  }
  int run() override {
    if (report_html_.empty()) return execute();
    debug::check_html_report_path(report_html_, "--report-html");
    try {
      return execute();
    } catch (const std::exception& error) {
      debug::save_search_html_failure(report_html_, "inspect capability", command_line(), error.what());
      log::info("Saved HTML report to {}", report_html_);
      throw;
    }
  }

 private:
  int execute() {
    const runtime::BackendDescriptor* asked = nullptr;
    std::vector<std::string> flags;
    int count = 0;
    for (const runtime::BackendDescriptor& backend : query_backends()) {
      flags.push_back("--" + backend.name);
      if (asked_[backend.name]) {
        asked = &backend;
        ++count;
      }
    }
    if (count != 1)
      raise<InvalidInputError>("inspect capability asks one backend which nodes it supports: give {}",
                               fmt::join(flags, " or "));
    const TensorMetadata input_shapes = parse_input_shapes(input_shapes_, "--input-shapes");
    onnx::Model loaded = model_.load();
    if (!input_shapes.empty()) override_input_shapes(loaded, input_shapes);
    onnx::Model prepared = runtime::prepare_for_partitioning(std::move(loaded), model_.shape_inference());
    std::unique_ptr<runtime::SupportQuery> query = asked->make_support_query();
    runtime::CapabilityReport report = runtime::analyze_capability(prepared, *query);
    std::string summary = report.summary();
    if (!report_html_.empty()) save_html_report(report, prepared);
    if (report.fully_supported()) {  // as Polygraphy: nothing to partition, nothing written
      log::info("{}", summary);
      return 0;
    }

    // Every subgraph is cut and checked before anything is written; one that fails ONNX's checker is
    // reported and left out, the others are written.
    std::vector<std::pair<std::string, onnx::Model>> files;
    std::vector<std::string> failed;
    for (const auto& partition : report.partitions) {
      onnx::Model part = onnx::extract_node_range(prepared, partition.begin, partition.end);
      type_boundary_tensors(part, prepared);
      try {
        onnx::check_model(part);
      } catch (const Error& error) {
        log::error("the subgraph {} is not written (the other subgraphs are): {}", partition.file_name(),
                   error.what());
        failed.push_back(partition.file_name());
        continue;
      }
      files.emplace_back(partition.file_name(), std::move(part));
    }
    if (!failed.empty())
      summary += fmt::format("\nNot written (they fail ONNX's checker): {}\n", fmt::join(failed, ", "));
    write_all(files, summary);
    log::info("{}", summary);
    for (const auto& node : report.unsupported)
      log::verbose("{} ({}), {}'s whole message:\n{}", node.name, node.op_type, report.backend,
                   node.detail);
    log::info("Saved {} subgraph(s) and results.txt to {}", files.size(), output_);
    return failed.empty() ? 0 : 1;
  }

  // The backends that answer a support query, the last registered first (--openvino, --onnxrt).
  static std::vector<std::reference_wrapper<const runtime::BackendDescriptor>> query_backends() {
    std::vector<std::reference_wrapper<const runtime::BackendDescriptor>> found;
    for (auto backend = runtime::backends().rbegin(); backend != runtime::backends().rend(); ++backend)
      if (backend->make_support_query) found.emplace_back(*backend);
    return found;
  }

  // A subgraph's inputs and outputs are the tensors it shares with the rest of the model; ONNX's checker wants
  // each to have a type with a shape. Where shape inference gave none (an If whose branches give another
  // rank each), the element type and rank come from one run of the model on the reference runner (made once,
  // when first needed; dims left unknown); when that run fails, the tensor stays as it is, and the subgraph
  // is reported by the checker.
  void type_boundary_tensors(onnx::Model& part, const onnx::Model& prepared) {
    auto untyped = [](const ::onnx::ValueInfoProto& value) {
      const auto& type = value.type();
      return !type.has_tensor_type() || type.tensor_type().elem_type() == 0 || !type.tensor_type().has_shape();
    };
    auto& graph = *part->mutable_graph();
    std::vector<::onnx::ValueInfoProto*> boundary;
    for (auto& input : *graph.mutable_input())
      if (untyped(input)) boundary.push_back(&input);
    for (auto& output : *graph.mutable_output())
      if (untyped(output)) boundary.push_back(&output);
    if (boundary.empty()) return;
    if (!ran_) {
      ran_.emplace();
      try {
        runtime::DataLoader data_loader;
        *ran_ = runtime::fallback_shape_inference(
            prepared, [&](const TensorMetadata& inputs) { return data_loader.generate(inputs, 0); });
      } catch (const Error& error) {
        log::warning("Shape inference leaves tensors between subgraphs without a shape, and the model could not "
                     "run on the reference runner to give them one: {}",
                     error.what());
      }
    }
    for (auto* value : boundary) {
      const TensorInfo* info = ran_->find(value->name());
      if (!info || !info->shape) continue;
      auto* tensor = value->mutable_type()->mutable_tensor_type();
      tensor->set_elem_type(static_cast<int32_t>(info->dtype));
      auto* shape = tensor->mutable_shape();
      shape->clear_dim();
      for (std::size_t d = 0; d < info->shape->size(); ++d) shape->add_dim();
      log::verbose("'{}' typed by a run of the model on the reference runner: {}, rank {}", value->name(),
                   dtype_name(info->dtype), info->shape->size());
    }
  }

  // --input-shapes: the graph inputs' shapes replaced; with shape inference on, every shape derived
  // from the old ones is dropped for prepare_for_partitioning to infer again.
  void override_input_shapes(onnx::Model& model, const TensorMetadata& shapes) const {
    auto& graph = *model->mutable_graph();
    with_context(fmt::format("--input-shapes ({})", model_.path()),
                 [&] { onnx::override_input_shapes(graph, shapes); });
    if (!model_.shape_inference()) return;
    onnx::clear_value_info(graph);
    for (auto& output : *graph.mutable_output())
      if (output.type().has_tensor_type()) output.mutable_type()->mutable_tensor_type()->clear_shape();
  }

  // Writes the models and results.txt; on a failure removes what this run wrote, then throws.
  void write_all(const std::vector<std::pair<std::string, onnx::Model>>& files,
                 const std::string& summary) const {
    std::error_code error;
    fs::create_directories(output_, error);
    if (error || !fs::is_directory(output_))
      raise<FileError>("cannot create the output folder {}: {}", output_,
                       error ? error.message() : "a file of that name is in the way");
    std::vector<fs::path> written;
    try {
      for (const auto& [name, model] : files) {
        fs::path path = fs::path(output_) / name;
        onnx::save_model(model, path);
        written.push_back(path);
      }
      write_file_atomic(fs::path(output_) / "results.txt", summary + "\n");
    } catch (const Error& failure) {
      for (const auto& path : written) fs::remove(path, error);
      raise<FileError>("could not write the subgraphs to {} (nothing left there): {}", output_,
                       failure.what());
    }
  }

  ModelArgs model_;
  std::vector<std::string> input_shapes_;
  std::map<std::string, bool> asked_;  // --<backend>: its support query is asked
  std::string output_ = "parity_capability_dumps";
  std::string report_html_;

  // --report-html: each partition (its nodes, supported or not, the reasons of its unsupported nodes) and
  // the unsupported nodes.
  void save_html_report(const runtime::CapabilityReport& report, const onnx::Model& prepared) const {
    // Table rows as arrays (a braced pair of a string and a value would be read as an object's member).
    auto row = [](const nlohmann::ordered_json& a, const nlohmann::ordered_json& b, const nlohmann::ordered_json& c) {
      nlohmann::ordered_json cells = nlohmann::ordered_json::array();
      cells.push_back(a);
      cells.push_back(b);
      cells.push_back(c);
      return cells;
    };
    const auto& graph = prepared->graph();
    nlohmann::ordered_json steps = nlohmann::ordered_json::array(), partitions = nlohmann::ordered_json::array();
    for (const auto& partition : report.partitions) {
      std::vector<std::string> reasons;
      for (const auto& node : report.unsupported)
        if (node.index >= partition.begin && node.index < partition.end)
          reasons.push_back(fmt::format("{} ({}): {}", node.name, node.op_type, node.reason));
      const std::string nodes = fmt::format("nodes {}-{}: {} .. {}", partition.begin, partition.end - 1,
                                            graph.node(partition.begin).name(), graph.node(partition.end - 1).name());
      steps.push_back({{"candidate", nodes},
                       {"size", partition.end - partition.begin},
                       {"passed", partition.supported},
                       {"verdict", partition.supported ? "supported" : "unsupported"},
                       {"detail", fmt::format("{}", fmt::join(reasons, "; "))}});
      partitions.push_back(row(partition.file_name(), partition.supported ? "supported" : "unsupported",
                               partition.end - partition.begin));
    }
    nlohmann::ordered_json unsupported = nlohmann::ordered_json::array();
    for (const auto& node : report.unsupported) unsupported.push_back(row(node.name, node.op_type, node.reason));
    nlohmann::ordered_json tables = nlohmann::ordered_json::array();
    tables.push_back({{"id", "answer"}, {"caption", "Subgraphs"}, {"columns", {"subgraph", "verdict", "nodes"}},
                      {"rows", std::move(partitions)}});
    tables.push_back({{"id", "unsupported"}, {"caption", fmt::format("Nodes {} cannot run", report.backend)},
                      {"columns", {"node", "op", "reason"}}, {"rows", std::move(unsupported)}});
    debug::save_search_html_report(
        report_html_,
        {{"title", "inspect capability"},
         {"command", command_line()},
         {"ok", report.fully_supported()},
         {"outcome", report.fully_supported() ? "fully supported" : "partly supported"},
         {"summary", fmt::format("{} runs {} of {} node(s), in {} subgraph(s).", report.backend,
                                 report.node_count - static_cast<int>(report.unsupported.size()), report.node_count,
                                 report.partitions.size())},
         {"tables", std::move(tables)},
         {"steps_caption", "Each subgraph in topological order"},
         {"size_axis", "nodes in the subgraph"},
         {"passed_word", "supported"},
         {"failed_word", "unsupported"},
         {"steps", std::move(steps)}});
    log::info("Saved HTML report to {}", report_html_);
  }
  std::optional<TensorMetadata> ran_;  // the reference run's tensors, once made (empty when it failed)
};

PARITY_REGISTER_COMMAND(InspectCapabilityCommand);

}  // namespace
}  // namespace parity::cli
