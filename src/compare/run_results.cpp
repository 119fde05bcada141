// Polygraphy's RunResults JSON (see run_results.h for the layout).
#include "parity/compare/run_results.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

#include "parity/core/array_io.h"
#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/json_depth.h"
#include "parity/core/tensor.h"

namespace parity::compare {
namespace {

using Json = nlohmann::ordered_json;
namespace dom = simdjson::dom;

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

std::string pad(int level) { return std::string(static_cast<std::size_t>(level) * 4, ' '); }

// --- reading: simdjson's DOM (the structure is tiny; the base64 strings are most of the bytes) ---

const char* type_name(dom::element value) {
  switch (value.type()) {
    case dom::element_type::ARRAY: return "array";
    case dom::element_type::OBJECT: return "object";
    case dom::element_type::STRING: return "string";
    case dom::element_type::BOOL: return "boolean";
    case dom::element_type::NULL_VALUE: return "null";
    default: return "number";
  }
}

// Accessors for values whose type was already checked (no dangling simdjson_result temporaries).
dom::array array_of(dom::element value) {
  dom::array out;
  if (value.get_array().get(out) != simdjson::SUCCESS) raise<InternalError>("RunResults reader: not a JSON array");
  return out;
}
dom::object object_of(dom::element value) {
  dom::object out;
  if (value.get_object().get(out) != simdjson::SUCCESS) raise<InternalError>("RunResults reader: not a JSON object");
  return out;
}
std::string_view string_of(dom::element value) {
  std::string_view out;
  if (value.get_string().get(out) != simdjson::SUCCESS) raise<InternalError>("RunResults reader: not a JSON string");
  return out;
}

bool is_number(dom::element value) {
  auto type = value.type();
  return type == dom::element_type::INT64 || type == dom::element_type::UINT64 || type == dom::element_type::DOUBLE;
}

// The class a decoded object declares (current or legacy marker), or "" for a plain dict.
std::string class_of(dom::element value) {
  if (!value.is_object()) return {};
  dom::object object = object_of(value);
  for (auto field : object)
    if (field.key == "polygraphy_class" && field.value.is_string())
      return std::string(string_of(field.value));
  for (auto field : object) {
    constexpr std::string_view kLegacy = "__polygraphy_encoded_";
    if (field.key.starts_with(kLegacy)) return std::string(field.key.substr(kLegacy.size()));
  }
  return {};
}

void expect_class(dom::element value, std::string_view expected, const std::string& what) {
  if (!value.is_object())
    raise<InvalidInputError>("{}: expected a Polygraphy-encoded {} object, found a JSON {}", what, expected,
                             type_name(value));
  std::string found = class_of(value);
  if (found != expected && !(expected == "LazyArray" && found == "LazyNumpyArray"))
    raise<InvalidInputError>("{}: expected a Polygraphy-encoded {}, found {}", what, expected,
                             found.empty() ? std::string("an object without \"polygraphy_class\"") : "'" + found + "'");
}

dom::element member(dom::element object, const char* key, const std::string& what) {
  dom::element value;
  if (object.at_key(key).get(value) != simdjson::SUCCESS)
    raise<InvalidInputError>("{}: missing the \"{}\" key", what, key);
  return value;
}

// The long strings of a document (the base64 arrays), taken out before parsing: the parser sees
// the structure with a short placeholder in each, and the array text is decoded straight from the
// mapped file. Parsing stays fast and small, and only the structure counts against simdjson's
// 4 GiB document limit.
class LongStrings {
 public:
  static constexpr std::size_t kThreshold = 4096;

  // The document with every string of kThreshold bytes or more replaced by a placeholder, or
  // nothing when it has none. Only valid JSON is scanned meaningfully; anything else fails to parse.
  std::optional<std::string> shrink(std::string_view text) {
    std::string out;
    std::size_t copied = 0, pos = 0;
    while (pos < text.size()) {
      const void* quote = std::memchr(text.data() + pos, '"', text.size() - pos);
      if (!quote) break;
      std::size_t open = static_cast<std::size_t>(static_cast<const char*>(quote) - text.data());
      std::size_t close = open + 1;
      bool closed = false;
      while (close < text.size()) {
        const void* next = std::memchr(text.data() + close, '"', text.size() - close);
        if (!next) break;
        close = static_cast<std::size_t>(static_cast<const char*>(next) - text.data());
        std::size_t backslashes = 0;
        while (close - backslashes > open + 1 && text[close - backslashes - 1] == '\\') ++backslashes;
        if (backslashes % 2 == 0) {
          closed = true;
          break;
        }
        ++close;
      }
      if (!closed) break;  // unterminated: the parser reports it
      if (close - open - 1 >= kThreshold) {
        if (out.empty()) out.reserve(1 << 20);
        out.append(text.substr(copied, open + 1 - copied));
        out.append(marker_).append(std::to_string(spans_.size()));
        spans_.push_back(text.substr(open + 1, close - open - 1));
        copied = close;
      }
      pos = close + 1;
    }
    if (spans_.empty()) return std::nullopt;
    out.append(text.substr(copied));
    return out;
  }

  // A parsed string's text: the original for a placeholder (unescaped if it holds escapes, which
  // Python's json.dumps never writes into base64 but other writers may, as "\\/").
  std::string_view resolve(std::string_view parsed, std::string& storage, const std::string& what) const {
    if (!parsed.starts_with(marker_)) return parsed;
    std::size_t index = 0;
    auto digits = parsed.substr(marker_.size());
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || index >= spans_.size())
      raise<InternalError>("{}: RunResults reader lost a long string", what);
    std::string_view raw = spans_[index];
    if (raw.find('\\') == std::string_view::npos) return raw;
    try {
      storage = nlohmann::json::parse("\"" + std::string(raw) + "\"").get<std::string>();
    } catch (const nlohmann::json::exception& error) {
      raise<InvalidInputError>("{}: not a valid JSON string: {}", what, error.what());
    }
    return storage;
  }
  // A parsed name (a runner's, an output's: names may be as long as the arrays), as a string.
  std::string name(std::string_view parsed, const std::string& what) const {
    std::string storage;
    return std::string(resolve(parsed, storage, what));
  }

 private:
  // Letters and digits only (valid inside a JSON string), with a random part no file will hold.
  static std::string make_marker() {
    std::random_device random;
    uint64_t nonce = (static_cast<uint64_t>(random()) << 32) | random();
    return fmt::format("parity-long-string-{:016x}-", nonce);
  }
  std::string marker_ = make_marker();
  std::vector<std::string_view> spans_;
};

// {"array": base64, "polygraphy_class": "ndarray"} (or the legacy marker): the base64 text is
// decoded where it lies in the mapped file, never copied.
Tensor decode_ndarray(dom::element value, const LongStrings& strings, const std::string& what) {
  if (!value.is_object())
    raise<InvalidInputError>("{}: expected a Polygraphy-encoded array ({{\"array\": ..., \"polygraphy_class\": "
                             "\"ndarray\"}}), found a JSON {}", what, type_name(value));
  std::string found = class_of(value);
  if (found.empty())
    raise<InvalidInputError>("{}: not a Polygraphy-encoded array: the object has no \"polygraphy_class\" key", what);
  if (found == "Tensor") {  // a torch tensor: {"tensor": base64 of torch.save bytes}
    dom::element tensor = member(value, "tensor", what);
    if (!tensor.is_string())
      raise<InvalidInputError>("{}: \"tensor\" must be a base64 string, found a JSON {}", what, type_name(tensor));
    std::string unescaped;
    return decode_torch_save(base64_decode(strings.resolve(string_of(tensor), unescaped, what), what), what);
  }
  if (found != "ndarray")
    raise<UnsupportedError>("{}: holds a Polygraphy-encoded '{}', but only 'ndarray' and 'Tensor' (torch) are "
                            "supported", what, found);
  dom::element array = member(value, "array", what);
  if (!array.is_string())
    raise<InvalidInputError>("{}: \"array\" must be a base64 string, found a JSON {}", what, type_name(array));
  std::string unescaped;
  return decode_polygraphy_array_text(strings.resolve(string_of(array), unescaped, what), what);
}

Tensor decode_lazy_array(dom::element value, const LongStrings& strings, const std::string& what) {
  if (class_of(value) == "ndarray") return decode_ndarray(value, strings, what);
  expect_class(value, "LazyArray", what);
  return decode_ndarray(member(value, "values", what), strings, what);
}

IterationResult decode_iteration(dom::element value, const LongStrings& strings, const std::string& what) {
  expect_class(value, "IterationResult", what);
  IterationResult result;
  dom::element name = member(value, "runner_name", what);
  if (!name.is_string() && !name.is_null())
    raise<InvalidInputError>("{}: \"runner_name\" must be a string, found a JSON {}", what, type_name(name));
  if (name.is_string()) result.runner_name = strings.name(string_of(name), what);
  dom::element runtime = member(value, "runtime", what);
  if (is_number(runtime)) result.runtime = runtime.get_double().value_unsafe();
  else if (!runtime.is_null())
    raise<InvalidInputError>("{}: \"runtime\" must be a number or null, found a JSON {}", what, type_name(runtime));
  dom::element outputs = member(value, "outputs", what);
  if (!outputs.is_object())
    raise<InvalidInputError>("{}: \"outputs\" must be a JSON object, found a JSON {}", what, type_name(outputs));
  for (auto field : object_of(outputs)) {
    std::string key = strings.name(field.key, what);
    result.outputs.emplace_back(key,
                                decode_lazy_array(field.value, strings, fmt::format("{}: output '{}'", what, key)));
  }
  return result;
}

// numpy.savez's archive of one iteration's outputs, keyed by output name (`--load-outputs
// torch_out.npz`): one runner named after the file, one iteration, no runtime.
RunResults npz_run_results(const std::filesystem::path& path) {
  NamedTensors arrays = load_npz(path);
  if (arrays.empty()) raise<InvalidInputError>("{}: the .npz archive holds no arrays (expected one per output)",
                                              path.string());
  IterationResult iteration;
  iteration.runner_name = path.filename().string();
  iteration.outputs = std::move(arrays);
  RunnerResults runner;
  runner.runner_name = iteration.runner_name;
  runner.iterations.push_back(std::move(iteration));
  return {std::move(runner)};
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

  AtomicFileWriter out(path);  // gathers the small writes itself
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
        with_context(
            fmt::format("{}: runner '{}': output '{}'", what, runner.runner_name, iteration.outputs[o].first),
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
  out.commit();
}

RunResults load_run_results(const std::filesystem::path& path) {
  const std::string what = path.string();
  dom::parser parser;
  dom::element document;
  // Mapped, not read (populated up front, read-only, padded for simdjson); the long strings are
  // decoded from the mapping, so it stays until every array is decoded.
  std::shared_ptr<Storage> file = map_file(path, simdjson::SIMDJSON_PADDING);
  std::string_view text(reinterpret_cast<const char*>(file->data()), file->size());
  // Told apart by their leading bytes, as the array readers do: a zip archive is an .npz.
  if (text.starts_with("PK\x03\x04") || text.starts_with("PK\x05\x06")) {
    file.reset();
    return npz_run_results(path);
  }
  if (text.starts_with("\x93NUMPY"))
    raise<InvalidInputError>("{}: a .npy file holds one unnamed array; outputs must be named: save them with "
                             "numpy.savez(path, **{{output_name: array}}) or as Polygraphy RunResults JSON", what);
  LongStrings strings;
  std::optional<std::string> shrunk = strings.shrink(text);
  std::string_view structure = shrunk ? std::string_view(*shrunk) : text;
  if (structure.size() > parser.max_capacity())
    raise<UnsupportedError>("{}: its JSON structure (without the array strings) is {} bytes, larger than the JSON "
                            "reader's limit of {} bytes", what, structure.size(), parser.max_capacity());
  simdjson::error_code error;
  if (shrunk) {
    shrunk->reserve(shrunk->size() + simdjson::SIMDJSON_PADDING);
    error = parser.parse(*shrunk).get(document);
  } else {
    error = parser.parse(reinterpret_cast<const uint8_t*>(text.data()), text.size(), /*realloc_if_needed=*/false)
                .get(document);
  }
  static_assert(simdjson::DEFAULT_MAX_DEPTH == kMaxJsonDepth, "one nesting limit for every JSON reader");
  if (error == simdjson::DEPTH_ERROR) raise_json_too_deep(what);
  if (error) raise<InvalidInputError>("{}: not valid JSON: {}", what, simdjson::error_message(error));
  expect_class(document, "RunResults", what + ": top level");
  dom::element list = member(document, "lst", what);
  if (!list.is_array())
    raise<InvalidInputError>("{}: \"lst\" must be a JSON list of [runner_name, [iteration results]] pairs, "
                             "found a JSON {}", what, type_name(list));
  RunResults results;
  std::size_t r = 0;
  for (auto entry : array_of(list)) {
    std::string where = fmt::format("{}: lst[{}]", what, r++);
    dom::array pair;
    dom::element name, iterations;
    if (entry.get_array().get(pair) != simdjson::SUCCESS || pair.size() != 2 ||
        pair.at(0).get(name) != simdjson::SUCCESS || pair.at(1).get(iterations) != simdjson::SUCCESS ||
        !name.is_string() || !iterations.is_array())
      raise<InvalidInputError>("{}: expected [runner_name, [iteration results]]", where);
    RunnerResults runner;
    runner.runner_name = strings.name(string_of(name), where);
    where += fmt::format(" (runner '{}')", runner.runner_name);
    std::size_t i = 0;
    for (auto iteration : array_of(iterations))
      runner.iterations.push_back(decode_iteration(iteration, strings, fmt::format("{}: iteration {}", where, i++)));
    results.push_back(std::move(runner));
  }
  return results;
}

}  // namespace parity::compare
