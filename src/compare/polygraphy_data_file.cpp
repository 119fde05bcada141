#include "parity/compare/polygraphy_data_file.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "parity/compare/run_results.h"
#include "parity/core/error.h"
#include "parity/core/json_depth.h"
#include "parity/core/file_io.h"
#include "parity/core/json_error.h"

namespace parity::compare {

PolygraphyData load_polygraphy_data(const std::filesystem::path& path) {
  const std::string what = path.string();
  // Peek at the text to pick the reader; both readers then report errors in detail.
  std::string text = read_file(path);
  std::size_t first = 0;
  while (first < text.size() && std::isspace(static_cast<unsigned char>(text[first]))) ++first;
  if (first == text.size()) raise<InvalidInputError>("{}: empty file; expected Polygraphy JSON data", what);

  PolygraphyData data;
  if (text[first] == '[') {
    text.clear();
    text.shrink_to_fit();
    data.inputs = load_inputs_json(path);
    return data;
  }
  if (text[first] != '{')
    raise<InvalidInputError>("{}: expected Polygraphy JSON data (a RunResults object or a list of feed dicts)", what);

  check_json_depth(text, what);
  nlohmann::ordered_json document;
  try {
    document = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& error) {  // also a number out of double's range (406)
    raise<InvalidInputError>("{}: not valid JSON: {}", what, json_error_text(error));
  }
  text.clear();
  text.shrink_to_fit();
  auto cls = document.find("polygraphy_class");
  bool run_results = (cls != document.end() && cls->is_string() && cls->get<std::string>() == "RunResults") ||
                     document.contains("__polygraphy_encoded_RunResults");
  if (run_results) {
    document = nullptr;
    data.is_run_results = true;
    data.results = load_run_results(path);
    return data;
  }
  // A single feed dict: one iteration.
  NamedTensors feed;
  for (auto& [name, value] : document.items()) {
    if (!value.is_object())
      raise<InvalidInputError>("{}: '{}' must be a Polygraphy-encoded array, found a JSON {}", what, name,
                               value.type_name());
    feed.emplace_back(name, decode_polygraphy_array(value, fmt::format("{}: input '{}'", what, name)));
  }
  data.inputs.push_back(std::move(feed));
  return data;
}

}  // namespace parity::compare
