// `--report-html` of the searches (`debug precision`, `debug reduce`, `inspect capability`): one
// self-contained HTML page with the outcome, the answer as tables, and each step of the search
// (candidate, verdict, error) as a chart and a table. No network requests: everything is inline,
// and a Content-Security-Policy forbids anything else.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace parity::debug {

// Refuses (FileError) a path whose folder does not exist or cannot be written, or that is a folder;
// `flag` names it in the message. Call before the search starts.
void check_html_report_path(const std::filesystem::path& path, const std::string& flag);

// Writes the page of a search atomically. `view`: {"title", "command", "ok" (bool), "outcome", "summary",
// "tables": [{"id", "caption", "columns": [..], "rows": [[..], ..]}], "steps_caption", "size_axis",
// "passed_word", "failed_word", "steps": [{"candidate", "size" (the chart's y), "passed" (bool),
// "verdict", "detail"}]}.
void save_search_html_report(const std::filesystem::path& path, const nlohmann::ordered_json& view);

// Writes the page of a search that ended with an error before its answer.
void save_search_html_failure(const std::filesystem::path& path, const std::string& title, const std::string& command,
                              const std::string& message);

}  // namespace parity::debug
