// What the Comparator's bindings (bind_compare.cpp) share with the dataset validation's
// (bind_dataset.cpp): the comparison functions CompareFunc makes and the runners as the C++ side
// takes them.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nanobind/nanobind.h>

#include "bindings.h"
#include "parity/compare/compare_func.h"
#include "parity/compare/run_results.h"

namespace parity::python {

// A comparison function made by CompareFunc.simple/indices/distance/quality.
struct CompareFunction {
  compare::CompareFunc function;
  std::string kind;
  std::optional<compare::SimpleOptions> simple{};  // CompareFunc.simple's options (streamed comparisons)
};

// The runners given to the Comparator: Parity's native runners as they are, runners written in
// Python through an adapter; each result is renamed to the runner's display name.
struct RunnerList {
  // runners: [(native Runner or Python runner object, display name or None)]
  explicit RunnerList(nb::list runners) {
    for (nb::handle item : runners) {
      auto entry = nb::cast<nb::tuple>(item);
      runtime::Runner* native = nullptr;
      if (nb::try_cast<runtime::Runner*>(entry[0], native) && native) {
        pointers.push_back(native);
      } else {
        std::string name = nb::cast<std::string>(entry[0].attr("name"));
        adapters.emplace_back(python_runner_adapter(nb::borrow(entry[0]), name));
        adapters.back()->set_name(name);  // the log lines carry the runner's own name
        pointers.push_back(adapters.back().get());
      }
      names.push_back(entry[1].is_none() ? pointers.back()->name() : nb::cast<std::string>(entry[1]));
    }
  }

  void rename(compare::RunResults& results) const {
    for (std::size_t i = 0; i < results.size() && i < names.size(); ++i) {
      results[i].runner_name = names[i];
      for (auto& iteration : results[i].iterations) iteration.runner_name = names[i];
    }
  }

  std::vector<std::unique_ptr<runtime::Runner>> adapters;
  std::vector<runtime::Runner*> pointers;
  std::vector<std::string> names;
};

}  // namespace parity::python
