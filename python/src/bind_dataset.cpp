// Validation over a dataset for Python (parity._parity.DatasetValidation, parity.open_dataset):
// the samples are run and judged by the C++ SampleValidator and merged into the DatasetSummary
// that `parity run --dataset` reports with; parity/comparator/dataset.py feeds it samples from any
// source (the CLI's folders and scripts, a sequence, a Ray Dataset).
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
#include "parity/core/error.h"
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

// The runners (activated once, for the object's life), the comparison and the merged summary.
class DatasetValidation {
 public:
  DatasetValidation(nb::list runners, const CompareFunction& function, nb::object metric, std::size_t samples,
                    std::size_t worst_count)
      : runners_(runners), summary_(samples, worst_count) {
    compare::MetricFunc metrics = metric_func(std::move(metric));
    nb::gil_scoped_release release;
    validator_ = std::make_unique<compare::SampleValidator>(runners_.pointers, function.function, std::move(metrics));
  }

  // Runs and judges sample `index` and merges its record; returns its verdict (--sample-results'
  // line) as a dict.
  nb::object validate(std::size_t index, nb::handle feed) {
    NamedTensors tensors = feed_from_dict(feed, "input");
    compare::SampleRecord record;
    {
      nb::gil_scoped_release release;
      record = validator_->validate(index, tensors);
      tensors.clear();
    }
    return add(record);
  }

  // Records sample `index` as failed with `error` (it could not be loaded).
  nb::object fail(std::size_t index, const std::string& error) {
    compare::SampleRecord record;
    record.index = index;
    record.error = error;
    return add(record);
  }

  void log_report() const { summary_.log_report(); }
  nb::object report() const { return json_to_python(summary_.to_json().dump()); }

  // Releases the runners (deactivated), with the GIL released for Python runners' deactivate.
  void close() {
    nb::gil_scoped_release release;
    validator_.reset();
  }

 private:
  nb::object add(const compare::SampleRecord& record) {
    if (!validator_) raise<InvalidInputError>("the dataset validation is closed");
    summary_.add(record);
    return json_to_python(record.verdict_json().dump());
  }

  RunnerList runners_;
  compare::DatasetSummary summary_;
  std::unique_ptr<compare::SampleValidator> validator_;
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

  nb::class_<DatasetValidation>(m, "DatasetValidation")
      .def(nb::init<nb::list, const CompareFunction&, nb::object, std::size_t, std::size_t>(), "runners"_a,
           "compare_func"_a, "metric"_a.none(), "samples"_a, "worst_count"_a)
      .def("validate", &DatasetValidation::validate, "index"_a, "feed"_a)
      .def("fail", &DatasetValidation::fail, "index"_a, "error"_a)
      .def("log_report", &DatasetValidation::log_report)
      .def("report", &DatasetValidation::report)
      .def("close", &DatasetValidation::close);
}

}  // namespace parity::python
