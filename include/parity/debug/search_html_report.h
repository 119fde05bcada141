// `--report-html` of the debug searches (`debug precision`): one self-contained HTML page of a
// search's JSON report: the outcome, the answer (the nodes kept), the error before and after, the
// latencies and each step of the search (candidate, verdict, error) as a table and a chart. No
// network requests: everything is inline, and a Content-Security-Policy forbids anything else.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace parity::debug {

// Refuses (FileError) a path whose folder does not exist or cannot be written, or that is a folder;
// `flag` names it in the message. Call before the search starts.
void check_html_report_path(const std::filesystem::path& path, const std::string& flag);

// Writes the page of a search (`report`: the command's JSON report) atomically.
void save_search_html_report(const std::filesystem::path& path, const std::string& title, const std::string& command,
                             const nlohmann::ordered_json& report);

// Writes the page of a search that ended with an error before its answer.
void save_search_html_failure(const std::filesystem::path& path, const std::string& title, const std::string& command,
                              const std::string& message);

}  // namespace parity::debug
