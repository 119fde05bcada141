// Validation over a dataset for Python (parity._parity.SampleValidation, DatasetValidation,
// open_dataset): the samples are run and judged by the C++ SampleValidator and merged into the
// DatasetSummary that `parity run --dataset` reports with; parity/comparator/dataset.py feeds them
// samples from any source (the CLI's folders and scripts, a sequence, a Ray Dataset).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "compare_bindings.h"
#include "conversion.h"
#include "parity/compare/dataset_validation.h"
#include "parity/compare/run_results.h"
#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/thread_pool.h"
#include "parity/runtime/dataset_source.h"

namespace parity::python {

using namespace nb::literals;

namespace {

// metric: callable(runner0, outputs0, runner1, outputs1, feed) -> [(name, value)] or an error
// message (str), called with the GIL held; dataset.py wraps the user's function into it.
compare::MetricFunc metric_func(nb::object metric) {
  if (metric.is_none()) return {};
  PythonObject function(std::move(metric));
  return [function](const compare::IterationResult& r0, const compare::IterationResult& r1, const NamedTensors& feed) {
    nb::gil_scoped_acquire gil;
    nb::object returned = nb::borrow(function.get())(r0.runner_name, dict_from_tensors(r0.outputs), r1.runner_name,
                                                      dict_from_tensors(r1.outputs), dict_from_tensors(feed));
    if (nb::isinstance<nb::str>(returned)) raise<InvalidInputError>("{}", nb::cast<std::string>(returned));
    std::vector<std::pair<std::string, double>> values;
    for (nb::handle entry : returned) {
      auto pair = nb::cast<nb::tuple>(entry);
      values.emplace_back(nb::cast<std::string>(pair[0]), nb::cast<double>(pair[1]));
    }
    return values;
  };
}

nb::object json_to_python(const std::string& text) { return nb::module_::import_("json").attr("loads")(text); }

// Runs and judges samples with runners it activates once (for the object's life): in this
// process, or in each actor of a Ray Data actor pool.
class SampleValidation {
 public:
  SampleValidation(nb::list runners, const CompareFunction& function, nb::object metric) : runners_(runners) {
    compare::MetricFunc metrics = metric_func(std::move(metric));
    nb::gil_scoped_release release;
    validator_ = std::make_unique<compare::SampleValidator>(runners_.pointers, function.function, std::move(metrics));
  }

  // Sample `index`'s record (as JSON text, for DatasetValidation.add).
  std::string validate(std::size_t index, nb::handle feed) {
    if (!validator_) raise<InvalidInputError>("the sample validation is closed");
    NamedTensors tensors = feed_from_dict(feed, "input");
    nb::gil_scoped_release release;
    std::string record = validator_->validate(index, tensors).to_json().dump();
    tensors.clear();
    return record;
  }

  // Saves a sample's feed (Polygraphy's input format, for --load-inputs) and every runner's
  // outputs for it (RunResults, for --load-outputs), as `parity run --save-worst` does.
  void save_sample(nb::handle feed, const std::string& inputs_path, const std::string& outputs_path) {
    if (!validator_) raise<InvalidInputError>("the sample validation is closed");
    NamedTensors tensors = feed_from_dict(feed, "input");
    nb::gil_scoped_release release;
    save_inputs_json(inputs_path, {tensors});
    compare::save_run_results(outputs_path, validator_->run(tensors));
  }

  // Deactivates the runners, with the GIL released for Python runners' deactivate.
  void close() {
    nb::gil_scoped_release release;
    validator_.reset();
  }

 private:
  RunnerList runners_;
  std::unique_ptr<compare::SampleValidator> validator_;
};

// The records of a dataset's samples merged into its report.
class DatasetValidation {
 public:
  DatasetValidation(std::size_t samples, std::size_t worst_count) : summary_(samples, worst_count) {}

  // Merges a record (SampleValidation.validate's) as sample `index`'s; returns its verdict (the
  // line --sample-results writes) as a dict.
  nb::object add(std::size_t index, const std::string& record_json) {
    compare::SampleRecord record = compare::SampleRecord::from_json(nlohmann::json::parse(record_json));
    // A Ray actor does not know the row's position: its record is made as sample 0, and renamed here.
    record.index = index;
    for (auto& pair : record.pairs)
      for (auto& output : pair.outputs)
        for (compare::ErrorSummary* summary : {&output.absolute, &output.relative}) {
          if (summary->min_sample != compare::ErrorSummary::kNoSample) summary->min_sample = index;
          if (summary->max_sample != compare::ErrorSummary::kNoSample) summary->max_sample = index;
        }
    return merge(record);
  }

  // Records sample `index` as failed with `error` (it could not be loaded).
  nb::object fail(std::size_t index, const std::string& error) {
    compare::SampleRecord record;
    record.index = index;
    record.error = error;
    return merge(record);
  }

  void log_report() const { summary_.log_report(); }
  nb::object report() const { return json_to_python(summary_.to_json().dump()); }

 private:
  nb::object merge(const compare::SampleRecord& record) {
    summary_.add(record);
    return json_to_python(record.verdict_json().dump());
  }

  compare::DatasetSummary summary_;
};

}  // namespace

void bind_dataset(nb::module_& m) {
  nb::class_<runtime::DatasetSource>(m, "DatasetSource")
      .def("__len__", &runtime::DatasetSource::size)
      .def("describe", &runtime::DatasetSource::describe)
      .def("load", [](runtime::DatasetSource& self, std::size_t index) {
        if (index >= self.size())
          raise<InvalidInputError>("sample {} of {}: the dataset has {} sample(s)", index, self.describe(),
                                   self.size());
        NamedTensors feed;
        {
          nb::gil_scoped_release release;
          feed = self.load(index);
        }
        return dict_from_tensors(feed);
      }, "index"_a);
  m.def("open_dataset", &runtime::open_dataset, "spec"_a, "python"_a);
  // The compute thread count (the comparisons' pool and the reference kernels' BLAS threads), which
  // validate_dataset pins in this process and gives to its Ray actors.
  m.def("compute_threads", &compute_threads);
  m.def("set_compute_threads", &set_compute_threads, "threads"_a);

  nb::class_<SampleValidation>(m, "SampleValidation")
      .def(nb::init<nb::list, const CompareFunction&, nb::object>(), "runners"_a, "compare_func"_a, "metric"_a.none())
      .def("validate", &SampleValidation::validate, "index"_a, "feed"_a)
      .def("save_sample", &SampleValidation::save_sample, "feed"_a, "inputs_path"_a, "outputs_path"_a)
      .def("close", &SampleValidation::close);
  nb::class_<DatasetValidation>(m, "DatasetValidation")
      .def(nb::init<std::size_t, std::size_t>(), "samples"_a, "worst_count"_a)
      .def("add", &DatasetValidation::add, "index"_a, "record"_a)
      .def("fail", &DatasetValidation::fail, "index"_a, "error"_a)
      .def("log_report", &DatasetValidation::log_report)
      .def("report", &DatasetValidation::report);
}

}  // namespace parity::python
