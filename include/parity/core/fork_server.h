// A fork server: a process forked once, early, that runs a function in a fresh fork of itself for
// each request sent to it later (ForkServer::start, from the server). Each request thus runs in
// the state this process had when the server started, not in its state at the time of the request:
// a library whose worker threads started after the server did (OpenVINO's CPU plugin, whose task
// executor a plain fork of this process leaves without threads, so that the child waits forever)
// starts afresh in every request's child. The server holds no threads of its own and ends when
// this process closes its socket or dies.
//
// Each request's child is forked by a waiter process the server forks for it, which reports the
// child's end; requests thus run at once, and a child may live on after its work's first answer
// (it reads more from its channel, a socket to the caller, until the caller closes it).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>

#include "parity/core/process.h"

namespace parity {

// Writes all `size` bytes to a socket (no SIGPIPE); false when its other end is closed.
bool channel_send(int socket, const void* data, std::size_t size);
// Reads exactly `size` bytes from a socket; false at its end (or an error) before them.
bool channel_receive(int socket, void* data, std::size_t size);
// A string as its 64-bit length and its bytes, and back.
bool channel_send_string(int socket, const std::string& text);
bool channel_receive_string(int socket, std::string& text);

class ForkServer {
 public:
  // Forks the server now. `work` runs in a child of the server for each request, with the request's
  // bytes and `channel`: a socket whose other end is the caller's ForkServer::Child::channel().
  // `description` names the server in errors ("cannot start <description>: ...").
  ForkServer(std::function<void(const std::string& request, int channel)> work, std::string description);
  // Closes the socket and waits for the server to end (children still running go on).
  ~ForkServer();
  ForkServer(const ForkServer&) = delete;
  ForkServer& operator=(const ForkServer&) = delete;

  // A request's child. Destroying it closes the channel and leaves the child to end unwaited.
  class Child {
   public:
    Child(int channel, int report, std::string description);
    ~Child();
    Child(Child&& other) noexcept;
    Child& operator=(Child&& other) = delete;
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    // The caller's end of the child's channel (-1 once wait() closed it). Reading it gives its end
    // once the child has ended.
    int channel() const { return channel_; }
    // Closes the channel (a child reading it reads its end) and waits for the child to end: how it
    // ended, as run_in_child_process says it (what `work` threw included). Throws ResourceLimitError
    // when the server or the child's waiter is gone (killed with this process's group by Ctrl-C, say).
    ChildProcessEnd wait();

   private:
    int channel_ = -1;
    int report_ = -1;
    std::string description_;
  };

  // Starts `work(request, channel)` in a fresh child of the server. Requests from several threads
  // are sent one at a time; their children run at once. Throws ResourceLimitError when the server
  // is gone.
  Child start(const std::string& request);
  // start(request).wait(): the child finds its channel closed by the caller.
  ChildProcessEnd run(const std::string& request);

 private:
  pid_t pid_ = -1;
  int socket_ = -1;
  std::string description_;
  std::mutex mutex_;
};

}  // namespace parity
