// Polygraphy's RunResults JSON (see run_results.h for the layout).
#include "parity/compare/run_results.h"

#include <cmath>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"

namespace parity::compare {
namespace {

using Json = nlohmann::ordered_json;

// A JSON string literal as Python's json.dumps writes it (ensure_ascii=True).
std::string quote(const std::string& text, const std::string& what) {
  try {
    return Json(text).dump(-1, ' ', /*ensure_ascii=*/true);
  } catch (const nlohmann::json::exception&) {
    raise<InvalidInputError>("{}: '{}' is not valid UTF-8, so it cannot be written to JSON", what, text);
  }
}

// Python's repr() of a float (shortest round-trip digits), as json.dumps writes it.
std::string python_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  std::string text = fmt::format("{}", value);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

class BufferedWriter {
 public:
  explicit BufferedWriter(AtomicFileWriter& file) : file_(file) { buffer_.reserve(kFlushAt + 4096); }
  void write(std::string_view text) {
    if (text.size() >= kFlushAt) {
      flush();
      file_.write(text);
      return;
    }
    buffer_.append(text);
    if (buffer_.size() >= kFlushAt) flush();
  }
  void flush() {
    if (!buffer_.empty()) file_.write(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kFlushAt = 1 << 20;
  AtomicFileWriter& file_;
  std::string buffer_;
};

std::string pad(int level) { return std::string(static_cast<std::size_t>(level) * 4, ' '); }

// The class a decoded object declares (current or legacy marker), or "" for a plain dict.
std::string class_of(const Json& object) {
  if (!object.is_object()) return {};
  if (auto it = object.find("polygraphy_class"); it != object.end() && it->is_string())
    return it->get<std::string>();
  for (const auto& [key, value] : object.items()) {
    constexpr std::string_view kLegacy = "__polygraphy_encoded_";
    if (key.starts_with(kLegacy)) return key.substr(kLegacy.size());
  }
  return {};
}

void expect_class(const Json& object, std::string_view expected, const std::string& what) {
  if (!object.is_object())
    raise<InvalidInputError>("{}: expected a Polygraphy-encoded {} object, found a JSON {}", what, expected,
                             object.type_name());
  std::string found = class_of(object);
  if (found != expected && !(expected == "LazyArray" && found == "LazyNumpyArray"))
    raise<InvalidInputError>("{}: expected a Polygraphy-encoded {}, found {}", what, expected,
                             found.empty() ? std::string("an object without \"polygraphy_class\"") : "'" + found + "'");
}

const Json& member(const Json& object, const char* key, const std::string& what) {
  auto it = object.find(key);
  if (it == object.end()) raise<InvalidInputError>("{}: missing the \"{}\" key", what, key);
  return *it;
}

Tensor decode_lazy_array(const Json& object, const std::string& what) {
  if (class_of(object) == "ndarray") return decode_polygraphy_array(object, what);
  expect_class(object, "LazyArray", what);
  return decode_polygraphy_array(member(object, "values", what), what);
}

IterationResult decode_iteration(Json& object, const std::string& what) {
  expect_class(object, "IterationResult", what);
  IterationResult result;
  const Json& name = member(object, "runner_name", what);
  if (!name.is_string() && !name.is_null())
    raise<InvalidInputError>("{}: \"runner_name\" must be a string, found a JSON {}", what, name.type_name());
  if (name.is_string()) result.runner_name = name.get<std::string>();
  const Json& runtime = member(object, "runtime", what);
  if (runtime.is_number()) result.runtime = runtime.get<double>();
  else if (!runtime.is_null())
    raise<InvalidInputError>("{}: \"runtime\" must be a number or null, found a JSON {}", what, runtime.type_name());
  auto outputs = object.find("outputs");
  if (outputs == object.end()) raise<InvalidInputError>("{}: missing the \"outputs\" key", what);
  if (!outputs->is_object())
    raise<InvalidInputError>("{}: \"outputs\" must be a JSON object, found a JSON {}", what, outputs->type_name());
  for (auto& [key, value] : outputs->items()) {
    result.outputs.emplace_back(key, decode_lazy_array(value, fmt::format("{}: output '{}'", what, key)));
    value = nullptr;  // release the base64 text early
  }
  return result;
}

}  // namespace

void save_run_results(const std::filesystem::path& path, const RunResults& results) {
  const std::string what = path.string();
  // Everything that can fail on the names is checked before the file is created.
  std::vector<std::string> runner_names;
  std::vector<std::vector<std::string>> iteration_names;
  std::vector<std::vector<std::vector<std::string>>> output_names;
  for (const auto& runner : results) {
    runner_names.push_back(quote(runner.runner_name, what));
    auto& names = iteration_names.emplace_back();
    auto& outputs = output_names.emplace_back();
    for (const auto& iteration : runner.iterations) {
      names.push_back(quote(iteration.runner_name, what));
      auto& quoted = outputs.emplace_back();
      std::set<std::string_view> seen;
      for (const auto& [name, tensor] : iteration.outputs) {
        if (!seen.insert(name).second)
          raise<InvalidInputError>("{}: runner '{}' has two outputs called '{}'", what, runner.runner_name, name);
        if (tensor.dtype() == DType::kString)
          raise<UnsupportedError>("{}: output '{}' of runner '{}' is a string tensor, which Polygraphy's format "
                                  "(numpy without pickle) cannot hold", what, name, runner.runner_name);
        quoted.push_back(quote(name, what));
      }
    }
  }

  AtomicFileWriter file(path);
  BufferedWriter out(file);
  out.write("{\n" + pad(1) + "\"lst\": [");
  for (std::size_t r = 0; r < results.size(); ++r) {
    const auto& runner = results[r];
    out.write(r ? ",\n" : "\n");
    out.write(pad(2) + "[\n" + pad(3) + runner_names[r] + ",\n" + pad(3) + "[");
    for (std::size_t i = 0; i < runner.iterations.size(); ++i) {
      const auto& iteration = runner.iterations[i];
      out.write(i ? ",\n" : "\n");
      out.write(pad(4) + "{\n" + pad(5) + "\"outputs\": {");
      for (std::size_t o = 0; o < iteration.outputs.size(); ++o) {
        out.write(o ? ",\n" : "\n");
        out.write(pad(6) + output_names[r][i][o] + ": {\n" + pad(7) + "\"values\": {\n" + pad(8) + "\"array\": \"");
        with_context(fmt::format("{}: runner '{}': output '{}'", what, runner.runner_name, iteration.outputs[o].first),
                     [&] { encode_npy_base64(iteration.outputs[o].second, [&](std::string_view c) { out.write(c); }); });
        out.write("\",\n" + pad(8) + "\"polygraphy_class\": \"ndarray\"\n" + pad(7) + "},\n" + pad(7) +
                  "\"polygraphy_class\": \"LazyArray\"\n" + pad(6) + "}");
      }
      out.write(iteration.outputs.empty() ? "}" : "\n" + pad(5) + "}");
      out.write(",\n" + pad(5) + "\"runtime\": " + (iteration.runtime ? python_float(*iteration.runtime) : "null"));
      out.write(",\n" + pad(5) + "\"runner_name\": " + iteration_names[r][i]);
      out.write(",\n" + pad(5) + "\"polygraphy_class\": \"IterationResult\"\n" + pad(4) + "}");
    }
    out.write(runner.iterations.empty() ? "]" : "\n" + pad(3) + "]");
    out.write("\n" + pad(2) + "]");
  }
  out.write(results.empty() ? "]" : "\n" + pad(1) + "]");
  out.write(",\n" + pad(1) + "\"polygraphy_class\": \"RunResults\"\n}");
  out.flush();
  file.commit();
}

RunResults load_run_results(const std::filesystem::path& path) {
  const std::string what = path.string();
  Json document;
  {
    std::string text = read_file(path);
    try {
      document = Json::parse(text);
    } catch (const nlohmann::json::parse_error& error) {
      raise<InvalidInputError>("{}: not valid JSON: {}", what, error.what());
    }
  }
  expect_class(document, "RunResults", what + ": top level");
  Json& list = document["lst"];
  if (!list.is_array())
    raise<InvalidInputError>("{}: \"lst\" must be a JSON list of [runner_name, [iteration results]] pairs, "
                             "found a JSON {}", what, list.type_name());
  RunResults results;
  for (std::size_t r = 0; r < list.size(); ++r) {
    Json& entry = list[r];
    std::string where = fmt::format("{}: lst[{}]", what, r);
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_array())
      raise<InvalidInputError>("{}: expected [runner_name, [iteration results]]", where);
    RunnerResults runner;
    runner.runner_name = entry[0].get<std::string>();
    where += fmt::format(" (runner '{}')", runner.runner_name);
    for (std::size_t i = 0; i < entry[1].size(); ++i) {
      runner.iterations.push_back(decode_iteration(entry[1][i], fmt::format("{}: iteration {}", where, i)));
      entry[1][i] = nullptr;
    }
    results.push_back(std::move(runner));
  }
  return results;
}

}  // namespace parity::compare
