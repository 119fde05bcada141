#include "args/output_marks.h"

#include "parity/core/error.h"
#include "parity/core/file_io.h"

namespace parity::cli {

runtime::IntermediateOutputs parse_output_marks(const std::vector<std::string>& args, const std::string& flag) {
  if (args.empty()) return runtime::IntermediateOutputs::none();
  if (args.size() == 2 && args[0] == "mark" && args[1] == "all") return runtime::IntermediateOutputs::all();
  std::vector<std::string> names;
  for (const auto& arg : args) {
    if (arg == "mark" || arg == "all")
      raise<InvalidInputError>("{}: use 'mark all' (two words, alone) to mark every tensor", flag);
    if (!arg.starts_with("@")) {
      names.push_back(arg);
      continue;
    }
    std::string text = read_file(arg.substr(1));
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto end = text.find('\n', pos);
      std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      line.erase(0, line.find_first_not_of(" \t\r"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty() && line[0] != '#') names.push_back(line);
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }
  return runtime::IntermediateOutputs::list(std::move(names));
}

}  // namespace parity::cli
