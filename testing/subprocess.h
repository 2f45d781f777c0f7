// SPDX-License-Identifier: Apache-2.0
// Test-only helpers to run programs and keep temporary files: kernel and peer
// tests drive the real binaries (bpfprof, bpfprof-workload, perf) this way.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace bpfprof::testing {

struct RunResult {
  int exit_code = -1;     // exit status, or 128 + signal
  std::string out, err;   // captured stdout / stderr
};

// Runs argv[0] (PATH lookup) with stdin from /dev/null and waits for it.
RunResult run(const std::vector<std::string>& argv);

// The same with stderr (and stdout too if `stdout_on_tty`) on a pseudo-terminal
// in raw mode (bytes arrive as written: no "\n" -> "\r\n"). `err` holds what
// the terminal received, in order; `out` the piped stdout, if any.
RunResult run_on_tty(const std::vector<std::string>& argv, bool stdout_on_tty = false);

// A child left running in the background (e.g. `bpfprof-workload --hold`).
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv);
  ~Background();  // kills (SIGKILL) and reaps if still running
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  pid_t pid() const { return pid_; }
  // Reads stdout until a line starting with `prefix` arrives; returns it ("" on EOF).
  std::string wait_for_line(const std::string& prefix);
  // Sends `sig` and waits; returns the exit code (128 + signal if killed).
  int stop(int sig);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string buffered_;
};

// The whole file's bytes (empty if it cannot be read).
std::vector<std::byte> read_file_bytes(const std::string& path);
// The same as a string.
std::string read_file_text(const std::string& path);
// Waits up to 10 s until the perf.data a recorder writes at `path` has data:
// its header's data size is set once the recorder finished a round.
bool wait_for_data(const std::string& path);

// A fresh directory under $TMPDIR removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Kernel tests call this instead of GTEST_SKIP: where CI has established that
// this machine supports perf_event_open and BPF (BPFPROF_REQUIRE_KERNEL=1), a
// skip is a failure.
bool kernel_tests_required();

// Why BPF programs cannot be loaded here ("" if they can): asks
// `<bin_dir>/bpfprof-workload --probe`. Kernel tests skip with this reason.
std::string bpf_refusal(const std::string& bin_dir);

// Mounts tracefs in a mount namespace of this process's own (it is not
// mounted at boot here; programs and tools attached through perf events read
// tracepoint ids from it). "" when done, else why not.
std::string mount_tracefs();

// The pid of `parent`'s child named `comm` (its comm, as pgrep -x matches
// it), waiting up to 10 s for it to start; 0 if it does not.
pid_t child_named(pid_t parent, const std::string& comm);

}  // namespace bpfprof::testing

// Skips with a printed reason, or fails where kernel tests are required.
#define BPFPROF_KERNEL_SKIP(reason)                                            \
  do {                                                                         \
    if (::bpfprof::testing::kernel_tests_required()) {                         \
      FAIL() << "kernel test would skip on a machine that supports it: " << (reason); \
    }                                                                          \
    GTEST_SKIP() << (reason);                                                  \
  } while (0)
