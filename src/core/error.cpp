// parity::Error's message text (parity/core/error.h).
#include "parity/core/error.h"

#include <algorithm>

namespace parity {

std::string Error::printable(std::string text) {
  if (std::find(text.begin(), text.end(), '\0') == text.end()) return text;
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == '\0') out += "\\0";
    else out += c;
  }
  return out;
}

}  // namespace parity
