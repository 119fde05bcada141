#include "args/value_parsing.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>

#include "parity/core/error.h"
#include "parity/core/file_io.h"
#include "parity/core/logger.h"

namespace parity::cli {

std::string command_line() {
  std::string text;
  try {
    text = read_file("/proc/self/cmdline");
  } catch (const Error&) {
    return "parity run";
  }
  while (!text.empty() && text.back() == '\0') text.pop_back();
  std::replace(text.begin(), text.end(), '\0', ' ');
  return text;
}

int run_with_verdict(const std::function<bool()>& body) {
  const auto start = std::chrono::steady_clock::now();
  const std::string command = command_line();
  log::start("RUNNING | Command: {}", command);
  const bool passed = body();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (passed) log::finish("PASSED | Runtime: {:.3f}s | Command: {}", seconds, command);
  else log::error("FAILED | Runtime: {:.3f}s | Command: {}", seconds, command);
  return passed ? 0 : 1;
}

double parse_double(const std::string& text, const std::string& flag) {
  std::string s = text;
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  if (lower == "inf" || lower == "+inf") return INFINITY;
  if (lower == "-inf") return -INFINITY;
  try {
    std::size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  raise<InvalidInputError>("{}: expected a number, got '{}'", flag, text);
}

int64_t parse_int(const std::string& text, const std::string& flag) {
  try {
    std::size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  raise<InvalidInputError>("{}: expected an integer, got '{}'", flag, text);
}

std::vector<int64_t> parse_dims(std::string_view text, const std::string& what) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']')
    raise<InvalidInputError>("{}: expected a shape like [1,3,224,224], got '{}'", what, text);
  std::vector<int64_t> dims;
  std::string_view body = text.substr(1, text.size() - 2);
  if (body.find_first_not_of(" ") == std::string_view::npos) return dims;
  std::size_t start = 0;
  while (start <= body.size()) {
    std::size_t comma = body.find(',', start);
    std::string item(body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    item.erase(0, item.find_first_not_of(" '\""));
    item.erase(item.find_last_not_of(" '\"") + 1);
    if (item.empty()) raise<InvalidInputError>("{}: empty dimension in '{}'", what, text);
    // A name ("batch", "?") is a symbolic dim; a number must be an int64 from -1 up: "1e9", "2.5",
    // "99999999999999999999" or "-5" are no dimension.
    const bool numeric = std::isdigit(static_cast<unsigned char>(item.front())) || item.front() == '-' ||
                         item.front() == '+' || item.front() == '.';
    if (!numeric) {
      dims.push_back(-1);
    } else {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(item.c_str(), &end, 10);
      if (errno != 0 || *end != '\0' || v < -1)
        raise<InvalidInputError>("{}: dimension '{}' in '{}' is not an integer from -1 (dynamic) to {}", what, item,
                                 text, INT64_MAX);
      dims.push_back(v);
    }
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return dims;
}

std::pair<std::string, std::string> split_named_bracket(const std::string& arg, bool name_required,
                                                        const std::string& flag) {
  auto bracket = arg.find('[');
  if (bracket == std::string::npos)
    raise<InvalidInputError>("{}: expected {}[...], got '{}'", flag, name_required ? "<name>:" : "[<name>:]", arg);
  if (bracket == 0) {
    if (name_required) raise<InvalidInputError>("{}: expected <name>:[...], got '{}' (no input name)", flag, arg);
    return {"", arg};
  }
  if (arg[bracket - 1] != ':')
    raise<InvalidInputError>("{}: expected {}[...], got '{}'", flag, name_required ? "<name>:" : "[<name>:]", arg);
  return {arg.substr(0, bracket - 1), arg.substr(bracket)};
}

std::string file_extension(const std::string& path) {
  auto dot = path.rfind('.');
  if (dot == std::string::npos) return "";
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext;
}

}  // namespace parity::cli
