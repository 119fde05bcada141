// One nesting limit for every JSON file Parity reads: replays, Polygraphy data files (inputs and
// RunResults), `.ovc` headers' maps, data loader scripts' results.
#pragma once

#include <string_view>

namespace parity {

// Arrays and objects nested deeper than this are refused: simdjson's default limit (the RunResults
// reader's). Far deeper than any file Parity or Polygraphy writes (a tensor's values nest once per
// dimension), and shallow enough that the recursive code that copies, compares and destroys parsed
// documents (nlohmann::json's) cannot overflow the stack.
inline constexpr int kMaxJsonDepth = 1024;

// Throws InvalidInputError "<what>: JSON nested deeper than 1024 levels ..." when `text` (before
// parsing) opens more than kMaxJsonDepth arrays and objects inside one another. Brackets inside
// strings are not counted; malformed text is left for the parser to report.
void check_json_depth(std::string_view text, std::string_view what);
// The error check_json_depth throws, for readers whose parser finds the depth itself (simdjson's).
[[noreturn]] void raise_json_too_deep(std::string_view what);

}  // namespace parity
