#include "parity/debug/fresh_process.h"

#include <string>

#include "parity/core/process.h"
#include "parity/core/error.h"

namespace parity::debug {

void run_in_child_process(const std::function<void()>& work) {
  const ChildProcessEnd end = parity::run_in_child_process(work, "a child process");
  if (end.signal != 0) raise<InternalError>("the child process was killed by signal {}", end.signal);
  const std::string message = end.thrown ? end.thrown->message : std::string();
  if (end.exit_status == 1) raise<InvalidInputError>("{}", message);
  if (end.exit_status != 0) raise<InternalError>("{}", message.empty() ? "the child process failed" : message);
}

}  // namespace parity::debug
