// A fork server: a process forked once, early, that runs a function in a fresh fork of itself for
// each request sent to it later (run_in_child_process, from the server). Each request thus runs in
// the state this process had when the server started, not in its state at the time of the request:
// a library whose worker threads started after the server did (OpenVINO's CPU plugin, whose task
// executor a plain fork of this process leaves without threads, so that the child waits forever)
// starts afresh in every request's child. The server holds no threads of its own and ends when
// this process closes its socket or dies.
#pragma once

#include <sys/types.h>

#include <functional>
#include <mutex>
#include <string>

#include "parity/core/process.h"

namespace parity {

class ForkServer {
 public:
  // Forks the server now. `work` runs in a child of the server for each request, with the request's
  // bytes. `description` names the server in errors ("cannot start <description>: ...").
  ForkServer(std::function<void(const std::string& request)> work, std::string description);
  // Closes the socket and waits for the server to end.
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // Runs `work(request)` in a fresh child of the server and says how the child ended, as
  // run_in_child_process does (what `work` threw included). One request at a time (callers on other
  // threads wait). Throws ResourceLimitError when the server is gone (killed with this process's
  // group by Ctrl-C, say).
  ChildProcessEnd run(const std::string& request);

 private:
  pid_t pid_ = -1;
  int socket_ = -1;
  std::string description_;
  std::mutex mutex_;
};

}  // namespace parity
