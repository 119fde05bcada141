#include "parity/core/json_depth.h"

#include "parity/core/error.h"

namespace parity {

void raise_json_too_deep(std::string_view what) {
  raise<InvalidInputError>("{}: JSON nested deeper than {} levels (arrays and objects inside one another); "
                           "Parity reads no deeper",
                           what, kMaxJsonDepth);
}

void check_json_depth(std::string_view text, std::string_view what) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > kMaxJsonDepth) raise_json_too_deep(what);
        break;
      case ']':
      case '}':
        --depth;
        break;
      default:
        break;
    }
  }
}

}  // namespace parity
