// SPDX-License-Identifier: Apache-2.0
#include "perf/tracefs.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <thread>

namespace bpfprof::perf {
namespace {

// Where tracefs may already be mounted, newest place first.
constexpr const char* kTracefsMounts[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

}  // namespace

Status with_tracefs(const std::function<void(const std::string& dir)>& fn) {
  for (const char* dir : kTracefsMounts) {
    struct stat st{};
    if (::stat((std::string(dir) + "/events").c_str(), &st) == 0) {
      fn(dir);
      return ok_status();
    }
  }
  // Not mounted: a thread of ours gets a mount namespace of its own (which
  // needs its own fs_struct too), makes every mount in it private so nothing
  // propagates back, mounts tracefs there and reads it. When the thread
  // exits, its namespace and the mount go with it.
  Status result = ok_status();
  std::thread t([&result, &fn] {
    if (::unshare(CLONE_FS | CLONE_NEWNS) != 0) {
      result = make_sys_error("unshare(CLONE_NEWNS) to mount tracefs privately", errno);
      return;
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      result = make_sys_error("making a private mount namespace", errno);
      return;
    }
    if (::mount("nodev", kTracefsMounts[0], "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                nullptr) != 0) {
      result = make_sys_error(std::string("mounting tracefs on ") + kTracefsMounts[0], errno);
      return;
    }
    fn(kTracefsMounts[0]);
  });
  t.join();
  return result;
}

}  // namespace bpfprof::perf
