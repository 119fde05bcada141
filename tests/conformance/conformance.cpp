// parity_conformance: runs the ONNX backend test cases (../shared/onnx-tests) through the
// reference interpreter and compares with the expected outputs (rtol 1e-3, atol 1e-7 for floats,
// exact for integers, bools and strings, NaN equal to NaN).
//
//   parity_conformance [--filter REGEX] [--verbose] [--check] [--report docs/conformance.md]
//
// --check fails (exit 1) when a case fails that known_failures/*.txt does not list, or a listed
// case passes, so the list stays true. A case listed as `~<case>: <reason>` passes on some machines and
// fails on others (its expected output hangs on rounding that the BLAS kernel a machine selects
// decides): either outcome is accepted and printed on every run, with its reason.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <onnx/onnx-data.pb.h>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/half.h"
#include "parity/core/values.h"
#include "parity/onnx/tensor_proto.h"
#include "parity/runtime/ref/interpreter.h"

namespace fs = std::filesystem;
using namespace parity;
using parity::ops::Value;

namespace {

struct Case {
  std::string name;   // e.g. test_add_bcast, or light_resnet50
  std::string suite;  // node, pytorch-converted, pytorch-operator, simple, light
  fs::path model;
  std::vector<fs::path> data_sets;  // folders with input_K.pb / output_K.pb (empty for light)
  fs::path light_output;            // light: <name>_output_0.pb
};

struct Outcome {
  bool passed = false;
  std::string reason;
  double seconds = 0;
  std::set<std::string> ops;
};

std::vector<Case> discover(const fs::path& root) {
  std::vector<Case> cases;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    fs::path dir = root / suite;
    if (!fs::exists(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (!fs::exists(entry.path() / "model.onnx")) continue;
      Case c{entry.path().filename().string(), suite, entry.path() / "model.onnx", {}, {}};
      for (const auto& sub : fs::directory_iterator(entry.path()))
        if (sub.is_directory() && sub.path().filename().string().rfind("test_data_set_", 0) == 0)
          c.data_sets.push_back(sub.path());
      std::sort(c.data_sets.begin(), c.data_sets.end());
      cases.push_back(std::move(c));
    }
  }
  if (fs::exists(root / "light")) {
    for (const auto& entry : fs::directory_iterator(root / "light")) {
      if (entry.path().extension() != ".onnx") continue;
      std::string stem = entry.path().stem().string();
      cases.push_back({stem, "light", entry.path(), {}, root / "light" / (stem + "_output_0.pb")});
    }
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) {
    return std::tie(a.suite, a.name) < std::tie(b.suite, b.name);
  });
  return cases;
}

template <typename Proto>
Proto parse_proto(const fs::path& path) {
  Proto proto;
  std::string bytes = read_file(path);
  if (!proto.ParseFromString(bytes)) raise<InvalidInputError>("{}: cannot parse", path.string());
  return proto;
}

Value value_from_sequence(const ::onnx::SequenceProto& seq);

Value value_from_optional(const ::onnx::OptionalProto& opt) {
  if (opt.has_tensor_value())
    return Value::optional(
        std::make_shared<Value>(Value::of(parity::onnx::tensor_from_proto(opt.tensor_value(), "."))));
  if (opt.has_sequence_value())
    return Value::optional(std::make_shared<Value>(value_from_sequence(opt.sequence_value())));
  return Value::optional(nullptr);
}

Value value_from_sequence(const ::onnx::SequenceProto& seq) {
  std::vector<Tensor> items;
  DType dtype = DType::kUndefined;
  for (const auto& t : seq.tensor_values()) {
    items.push_back(parity::onnx::tensor_from_proto(t, "."));
    dtype = items.back().dtype();
  }
  if (seq.sequence_values_size() || seq.map_values_size() || seq.optional_values_size())
    raise<UnsupportedError>("nested sequences/maps in test data");
  return Value::sequence(std::move(items), dtype);
}

// Reads a .pb as the kind the model declares for that position.
Value read_value(const fs::path& path, const ::onnx::TypeProto& type) {
  if (type.has_sequence_type()) return value_from_sequence(parse_proto<::onnx::SequenceProto>(path));
  if (type.has_optional_type()) return value_from_optional(parse_proto<::onnx::OptionalProto>(path));
  return Value::of(parity::onnx::tensor_from_proto(parse_proto<::onnx::TensorProto>(path), "."));
}

struct Tolerance {
  double rtol = 1e-3, atol = 1e-7;
};

// Compares one tensor; returns an empty string when it matches.
std::string compare_tensor(const Tensor& expected, const Tensor& actual, const Tolerance& tol) {
  if (expected.dtype() != actual.dtype())
    return fmt::format("dtype {} expected, got {}", dtype_name(expected.dtype()), dtype_name(actual.dtype()));
  if (expected.shape() != actual.shape())
    return fmt::format("shape {} expected, got {}", shape_to_string(expected.shape()), shape_to_string(actual.shape()));
  DType dtype = expected.dtype();
  if (dtype == DType::kString) {
    for (int64_t i = 0; i < expected.size(); ++i)
      if (expected.data<std::string>()[i] != actual.data<std::string>()[i])
        return fmt::format("string {} differs: '{}' expected, got '{}'", i, expected.data<std::string>()[i],
                           actual.data<std::string>()[i]);
    return "";
  }
  bool floating = is_floating(dtype) || dtype == DType::kComplex64 || dtype == DType::kComplex128;
  bool numeric = has_numeric_values(dtype);
  if (!floating || !numeric) {
    if (dtype == DType::kComplex64 || dtype == DType::kComplex128) {
      int64_t n = expected.size() * 2;
      for (int64_t i = 0; i < n; ++i) {
        double e = dtype == DType::kComplex64 ? expected.data<float>()[i] : expected.data<double>()[i];
        double a = dtype == DType::kComplex64 ? actual.data<float>()[i] : actual.data<double>()[i];
        if (std::isnan(e) && std::isnan(a)) continue;
        if (!(std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e)))
          return fmt::format("complex component {}: expected {}, got {}", i, e, a);
      }
      return "";
    }
    if (!identical(expected, actual)) {
      if (numeric) {
        for (int64_t i = 0; i < expected.size(); ++i) {
          double e = element_as_double(expected, i), a = element_as_double(actual, i);
          if (e != a && !(std::isnan(e) && std::isnan(a)))
            return fmt::format("element {}: expected {}, got {} (exact match required)", i, e, a);
        }
      }
      if (is_floating(dtype)) {  // float8 etc.: compare bytes, NaN patterns aside
        return "bytes differ";
      }
      return "values differ (exact match required)";
    }
    return "";
  }
  double worst = 0;
  int64_t worst_index = -1, bad = 0;
  for (int64_t i = 0; i < expected.size(); ++i) {
    double e = element_as_double(expected, i), a = element_as_double(actual, i);
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) && std::isnan(a)) continue;
      ++bad;
      if (worst_index < 0) worst_index = i;
      worst = INFINITY;
      continue;
    }
    if (e == a) continue;  // covers equal infinities
    double err = std::fabs(a - e);
    if (!(err <= tol.atol + tol.rtol * std::fabs(e))) {
      ++bad;
      if (err > worst || worst_index < 0) {
        worst = err;
        worst_index = i;
      }
    }
  }
  if (bad == 0) return "";
  return fmt::format("{} of {} elements outside tolerance; worst at {}: expected {}, got {} (abs err {:.3g})", bad,
                     expected.size(), worst_index, element_as_double(expected, worst_index),
                     element_as_double(actual, worst_index), worst);
}

std::string compare_value(const Value& expected, const Value& actual, const Tolerance& tol) {
  if (expected.is_tensor()) {
    if (actual.is_optional() && actual.optional_value()) return compare_value(expected, *actual.optional_value(), tol);
    if (!actual.is_tensor()) return fmt::format("expected a tensor, got a {}", actual.kind_name());
    return compare_tensor(expected.tensor(), actual.tensor(), tol);
  }
  if (expected.is_sequence()) {
    const Value* a = &actual;
    if (actual.is_optional() && actual.optional_value()) a = actual.optional_value();
    if (!a->is_sequence()) return fmt::format("expected a sequence, got a {}", actual.kind_name());
    if (expected.sequence().size() != a->sequence().size())
      return fmt::format("sequence of {} expected, got {}", expected.sequence().size(), a->sequence().size());
    for (std::size_t i = 0; i < expected.sequence().size(); ++i) {
      std::string r = compare_tensor(expected.sequence()[i], a->sequence()[i], tol);
      if (!r.empty()) return fmt::format("sequence element {}: {}", i, r);
    }
    return "";
  }
  if (expected.is_optional()) {
    const Value* e = expected.optional_value();
    if (!actual.is_optional()) {
      if (!e) return fmt::format("expected an empty optional, got a {}", actual.kind_name());
      return compare_value(*e, actual, tol);
    }
    const Value* a = actual.optional_value();
    if (!e || !a) return (!e && !a) ? "" : "optional emptiness differs";
    return compare_value(*e, *a, tol);
  }
  return "unexpected expected-value kind";
}

std::vector<std::string> g_expand_ops;

Outcome run_case(const Case& c) {
  Outcome outcome;
  auto start = std::chrono::steady_clock::now();
  try {
    parity::onnx::Model model = parity::onnx::load_model(c.model);
    for (const auto& node : model->graph().node())
      outcome.ops.insert((node.domain().empty() ? "" : node.domain() + ".") + node.op_type());
    const auto& graph = model->graph();
    std::set<std::string> initializers;
    for (const auto& t : graph.initializer()) initializers.insert(t.name());
    std::vector<const ::onnx::ValueInfoProto*> inputs;
    for (const auto& i : graph.input())
      if (!initializers.count(i.name())) inputs.push_back(&i);
    runtime::InterpreterOptions options;
    options.expand_ops = g_expand_ops;
    runtime::Interpreter interpreter(model, options);

    auto check_outputs = [&](const runtime::NamedValues& results, const std::vector<Value>& expected) -> std::string {
      for (std::size_t k = 0; k < expected.size(); ++k) {
        if (k >= results.size()) return fmt::format("output {} missing", k);
        std::string r = compare_value(expected[k], results[k].second, {});
        if (!r.empty()) return fmt::format("output {} ('{}'): {}", k, results[k].first, r);
      }
      return "";
    };

    if (c.suite == "light") {
      runtime::NamedValues feed;
      for (const auto* input : inputs) {
        Shape shape;
        for (const auto& d : input->type().tensor_type().shape().dim())
          shape.push_back(d.has_dim_value() ? d.dim_value() : 1);
        Tensor t = Tensor::zeros(DType::kFloat32, shape);
        int64_t n = t.size();
        for (int64_t i = 0; i < n; ++i) t.mutable_data<float>()[i] = static_cast<float>(static_cast<double>(i) / n);
        feed.emplace_back(input->name(), Value::of(t));
      }
      auto results = interpreter.run(feed);
      std::vector<Value> expected{read_value(c.light_output, graph.output(0).type())};
      outcome.reason = check_outputs(results, expected);
    } else {
      if (c.data_sets.empty()) raise<InvalidInputError>("no test_data_set folders");
      for (const auto& set : c.data_sets) {
        runtime::NamedValues feed;
        for (std::size_t k = 0;; ++k) {
          fs::path p = set / fmt::format("input_{}.pb", k);
          if (!fs::exists(p)) break;
          if (k >= inputs.size()) raise<InvalidInputError>("more input files than graph inputs");
          feed.emplace_back(inputs[k]->name(), read_value(p, inputs[k]->type()));
        }
        auto results = interpreter.run(feed);
        std::vector<Value> expected;
        for (std::size_t k = 0;; ++k) {
          fs::path p = set / fmt::format("output_{}.pb", k);
          if (!fs::exists(p)) break;
          expected.push_back(read_value(p, graph.output(static_cast<int>(k)).type()));
        }
        outcome.reason = check_outputs(results, expected);
        if (!outcome.reason.empty()) {
          if (c.data_sets.size() > 1) outcome.reason = set.filename().string() + ": " + outcome.reason;
          break;
        }
      }
    }
    outcome.passed = outcome.reason.empty();
  } catch (const std::exception& e) {
    outcome.reason = e.what();
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

// `<case>: <reason>` lines; a `~` before the case marks a machine-dependent outcome (`varies`).
std::map<std::string, std::string> load_known_failures(const fs::path& dir, std::set<std::string>& varies) {
  std::map<std::string, std::string> known;
  if (!fs::exists(dir)) return known;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".txt") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::ifstream in(file);
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      auto start = line.find_first_not_of(" \t");
      if (start == std::string::npos || line[start] == '#') continue;
      auto colon = line.find(':');
      if (colon == std::string::npos)
        raise<InvalidInputError>("{}:{}: expected '<case>: <reason>'", file.string(), number);
      const bool machine_dependent = line[start] == '~';
      if (machine_dependent) ++start;
      std::string name = line.substr(start, colon - start);
      while (!name.empty() && name.back() == ' ') name.pop_back();
      if (machine_dependent) varies.insert(name);
      std::string reason = line.substr(colon + 1);
      reason.erase(0, reason.find_first_not_of(" \t"));
      if (reason.empty()) raise<InvalidInputError>("{}:{}: case '{}' has no reason", file.string(), number, name);
      if (known.count(name)) raise<InvalidInputError>("{}:{}: case '{}' listed twice", file.string(), number, name);
      known[name] = reason;
    }
  }
  return known;
}

void write_report(const fs::path& path, const std::vector<Case>& cases, const std::vector<Outcome>& outcomes,
                  const std::map<std::string, std::string>& known) {
  struct Tally { int passed = 0, total = 0; };
  std::map<std::string, Tally> suites, ops;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto& s = suites[cases[i].suite];
    ++s.total;
    s.passed += outcomes[i].passed;
    if (cases[i].suite != "node") continue;
    bool expanded = cases[i].name.find("_expanded") != std::string::npos;
    for (const auto& op : outcomes[i].ops) {
      if (expanded) continue;  // expanded cases count under the ops of their function body
      auto& t = ops[op];
      ++t.total;
      t.passed += outcomes[i].passed;
    }
  }
  std::string out =
      "# Reference runner conformance\n\n"
      "Generated by `parity_conformance --report docs/conformance.md` (run by `make conformance-report`): every "
      "case in `../shared/onnx-tests` run through Parity's reference interpreter, compared with the expected "
      "outputs (rtol 1e-3, atol 1e-7 for floats; exact for integers, bools and strings; NaN equals NaN).\n\n"
      "## By suite\n\n| suite | passed | total | rate |\n|---|---:|---:|---:|\n";
  for (const auto& [suite, t] : suites)
    out +=
        fmt::format("| {} | {} | {} | {:.1f}% |\n", suite, t.passed, t.total, 100.0 * t.passed / std::max(1, t.total));
  out += "\n## Node cases by operator\n\nCases named `*_expanded*` (the op's ONNX function body) are counted in the "
         "suite total only.\n\n| op | passed | total |\n|---|---:|---:|\n";
  for (const auto& [op, t] : ops) out += fmt::format("| {} | {} | {} |\n", op, t.passed, t.total);
  out += "\n## Cases that do not pass\n\nFrom `tests/conformance/known_failures/*.txt`, each with its reason.\n\n"
         "| case | reason |\n|---|---|\n";
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (outcomes[i].passed) continue;
    auto it = known.find(cases[i].name);
    std::string reason = it != known.end() ? it->second : "NOT LISTED: " + outcomes[i].reason;
    std::replace(reason.begin(), reason.end(), '|', '/');
    out += fmt::format("| {} | {} |\n", cases[i].name, reason);
  }
  write_file_atomic(path, out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run the ONNX backend test cases through Parity's reference interpreter"};
  std::string root = std::string(PARITY_SHARED_DIR) + "/onnx-tests";
  std::string filter = ".*";
  std::string known_dir = std::string(PARITY_SOURCE_DIR) + "/tests/conformance/known_failures";
  std::string report;
  bool verbose = false, check = false, list_failures = false;
  app.add_option("--root", root, "Folder holding node/, light/, ...");
  app.add_option("--filter", filter, "Regular expression on case names (search, not full match)");
  app.add_option("--known-failures", known_dir, "Folder of <case>: <reason> files");
  app.add_option("--report", report, "Write a Markdown summary (docs/conformance.md)");
  app.add_flag("--verbose", verbose, "Print every case, not only failures");
  app.add_flag("--check", check, "Exit 1 when an unlisted case fails or a listed case passes");
  app.add_flag("--list-failures", list_failures, "Print failing cases as '<case>: <reason>' lines");
  app.add_option("--expand", g_expand_ops, "Run these op types through their ONNX function body, not their kernel")
      ->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  try {
    std::set<std::string> varies;
    auto known = load_known_failures(known_dir, varies);
    std::regex pattern(filter);
    std::vector<Case> cases;
    for (auto& c : discover(root))
      if (std::regex_search(c.name, pattern)) cases.push_back(std::move(c));
    if (cases.empty()) {
      fmt::print(stderr, "no case matches '{}' under {}\n", filter, root);
      return 1;
    }
    std::vector<Outcome> outcomes;
    int passed = 0;
    std::vector<std::string> unexpected_failures, unexpected_passes;
    for (const auto& c : cases) {
      Outcome o = run_case(c);
      bool listed = known.count(c.name) > 0;
      if (o.passed) ++passed;
      if (!o.passed && !listed) unexpected_failures.push_back(c.name);
      if (o.passed && listed && !varies.count(c.name)) unexpected_passes.push_back(c.name);
      if (varies.count(c.name))
        fmt::print("VARIES {} {} on this machine (listed as: {})\n", c.name, o.passed ? "passed" : "failed", known[c.name]);
      if (list_failures && !o.passed) fmt::print("{}: {}\n", c.name, o.reason);
      else if (verbose || (!o.passed && !listed))
        fmt::print("{} {} ({:.2f}s){}\n", o.passed ? "PASS" : (listed ? "KNOWN" : "FAIL"), c.name, o.seconds,
                   o.passed ? "" : " | " + o.reason);
      outcomes.push_back(std::move(o));
    }
    std::map<std::string, std::pair<int, int>> by_suite;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      auto& t = by_suite[cases[i].suite];
      t.first += outcomes[i].passed;
      ++t.second;
    }
    for (const auto& [suite, t] : by_suite) fmt::print("{}: {}/{} passed\n", suite, t.first, t.second);
    for (const auto& name : unexpected_passes) fmt::print("UNEXPECTED PASS {} (listed as: {})\n", name, known[name]);
    if (!report.empty()) write_report(report, cases, outcomes, known);
    fmt::print("{} passed, {} failed ({} known failures, {} unexpected failures, {} unexpected passes)\n", passed,
               cases.size() - passed, cases.size() - passed - unexpected_failures.size(), unexpected_failures.size(),
               unexpected_passes.size());
    if (check && (!unexpected_failures.empty() || !unexpected_passes.empty())) return 1;
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
