// SPDX-License-Identifier: Apache-2.0
#include "record/forked_command.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace bpfprof::record {

Result<Workload> Workload::fork_held(const std::vector<std::string>& argv,
                                     const sigset_t& child_mask) {
  if (argv.empty()) return make_error(Errc::kInvalidArgument, "empty command");
  int go[2], err[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return make_sys_error("pipe2", errno);
  if (::pipe2(err, O_CLOEXEC) != 0) {
    int e = errno;
    ::close(go[0]);
    ::close(go[1]);
    return make_sys_error("pipe2", e);
  }
  // argv is built before fork: the child must not allocate.
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    for (int fd : {go[0], go[1], err[0], err[1]}) ::close(fd);
    return make_sys_error("fork", e);
  }
  if (pid == 0) {
    ::close(go[1]);
    ::close(err[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    char c = 0;
    ssize_t n;
    do {
      n = ::read(go[0], &c, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(127);
    ::sigprocmask(SIG_SETMASK, &child_mask, nullptr);
    ::execvp(args[0], args.data());
    int e = errno;
    (void)!::write(err[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(go[0]);
  ::close(err[1]);
  Workload w;
  w.argv0_ = argv[0];
  w.pid_ = pid;
  w.go_fd_.reset(go[1]);
  w.error_fd_.reset(err[0]);
  w.pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!w.pidfd_.valid()) return make_sys_error("pidfd_open", errno);
  return w;
}

Workload::Workload(Workload&& o) noexcept
    : argv0_(std::move(o.argv0_)),
      pid_(std::exchange(o.pid_, -1)),
      go_fd_(std::move(o.go_fd_)),
      error_fd_(std::move(o.error_fd_)),
      pidfd_(std::move(o.pidfd_)),
      status_(o.status_) {}

Workload::~Workload() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    reap();
  }
}

Status Workload::start() {
  char c = 1;
  if (::write(go_fd_.get(), &c, 1) != 1) return make_sys_error("starting the command", errno);
  go_fd_.reset();
  int e = 0;
  ssize_t n;
  do {
    n = ::read(error_fd_.get(), &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  error_fd_.reset();
  if (n == sizeof e) {
    reap();
    Error error = make_sys_error("exec " + argv0_, e);
    if (e == ENOENT) error.code = Errc::kNotFound;
    return error;
  }
  return ok_status();
}

int Workload::reap() {
  if (status_) return *status_;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  status_ = status;
  return status;
}

int Workload::terminate_and_reap() {
  if (status_) return *status_;
  siginfo_t info{};
  // Still running? Peek without reaping.
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      info.si_pid == 0) {
    ::kill(pid_, SIGTERM);
  }
  return reap();
}

}  // namespace bpfprof::record
