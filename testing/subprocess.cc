// SPDX-License-Identifier: Apache-2.0
#include "testing/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <thread>

namespace bpfprof::testing {
namespace {

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const auto& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

pid_t spawn(const std::vector<std::string>& argv, int out_w, int err_w) {
  auto args = c_argv(argv);
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out_w, 1);
    dup2(err_w, 2);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Reads out_fd and err_fd (either may be -1) to their ends, then reaps pid. A
// pseudo-terminal's master ends with EIO once the child side is closed.
RunResult collect(pid_t pid, int out_fd, int err_fd) {
  RunResult r;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = (out_fd >= 0) + (err_fd >= 0);
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) continue;
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = decode_status(status);
  return r;
}

}  // namespace

RunResult run(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) throw std::runtime_error("pipe");
  pid_t pid = spawn(argv, out[1], err[1]);
  close(out[1]);
  close(err[1]);
  return collect(pid, out[0], err[0]);
}

RunResult run_on_tty(const std::vector<std::string>& argv, bool stdout_on_tty) {
  int master = -1, tty = -1;
  termios raw{};
  cfmakeraw(&raw);
  if (openpty(&master, &tty, nullptr, &raw, nullptr) != 0) throw std::runtime_error("openpty");
  fcntl(master, F_SETFD, FD_CLOEXEC);
  fcntl(tty, F_SETFD, FD_CLOEXEC);
  int out[2] = {-1, -1};
  if (!stdout_on_tty && pipe2(out, O_CLOEXEC)) throw std::runtime_error("pipe");
  pid_t pid = spawn(argv, stdout_on_tty ? tty : out[1], tty);
  close(tty);
  if (out[1] >= 0) close(out[1]);
  return collect(pid, out[0], master);
}

Background::Background(const std::vector<std::string>& argv) {
  int out[2];
  if (pipe2(out, O_CLOEXEC)) throw std::runtime_error("pipe");
  pid_ = spawn(argv, out[1], 2);
  close(out[1]);
  out_fd_ = out[0];
}

Background::~Background() {
  if (pid_ > 0) stop(SIGKILL);
  if (out_fd_ >= 0) close(out_fd_);
}

std::string Background::wait_for_line(const std::string& prefix) {
  char buf[4096];
  for (;;) {
    size_t nl;
    while ((nl = buffered_.find('\n')) != std::string::npos) {
      std::string line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      if (line.rfind(prefix, 0) == 0) return line;
    }
    ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    buffered_.append(buf, static_cast<size_t>(n));
  }
}

int Background::stop(int sig) {
  if (pid_ <= 0) return -1;
  kill(pid_, sig);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return decode_status(status);
}

std::vector<std::byte> read_file_bytes(const std::string& path) {
  const std::string c = read_file_text(path);
  std::vector<std::byte> out(c.size());
  if (!c.empty()) std::memcpy(out.data(), c.data(), c.size());  // not from null (UBSan)
  return out;
}

std::string read_file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool wait_for_data(const std::string& path) {
  for (int i = 0; i < 100; i++) {
    // The header's data section: {offset, size} at bytes 40 and 48.
    char header[56] = {};
    std::ifstream in(path, std::ios::binary);
    uint64_t data_size = 0;
    if (in.read(header, sizeof header)) std::memcpy(&data_size, header + 48, sizeof data_size);
    if (data_size > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/bpfprof-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool kernel_tests_required() {
  const char* v = getenv("BPFPROF_REQUIRE_KERNEL");
  return v && std::string(v) == "1";
}

std::string bpf_refusal(const std::string& bin_dir) {
  RunResult probe = run({bin_dir + "/bpfprof-workload", "--probe"});
  if (probe.exit_code == 0) return "";
  return "BPF refused by this kernel: " + probe.out + probe.err;
}

std::string mount_tracefs() {
  if (::unshare(CLONE_NEWNS) != 0) return std::string("unshare: ") + std::strerror(errno);
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return std::string("making / private: ") + std::strerror(errno);
  }
  if (::mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0 && errno != EBUSY) {
    return std::string("mounting tracefs: ") + std::strerror(errno);
  }
  return "";
}

pid_t child_named(pid_t parent, const std::string& comm) {
  for (int i = 0; i < 200; i++) {
    RunResult r = run({"pgrep", "-P", std::to_string(parent), "-x", comm});
    if (r.exit_code == 0) return static_cast<pid_t>(std::stoi(r.out));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

}  // namespace bpfprof::testing
