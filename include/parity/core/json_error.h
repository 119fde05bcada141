// nlohmann::json's exception text without its "[json.exception.<kind>.<id>] " tag: the part a
// user can act on ("number overflow parsing '1e999999'", "syntax error while parsing value ...").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace parity {

inline std::string json_error_text(const nlohmann::json::exception& error) {
  std::string text = error.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const auto end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  return text;
}

}  // namespace parity
