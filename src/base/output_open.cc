// SPDX-License-Identifier: Apache-2.0
#include "base/output_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace bpfprof {
namespace {

Error symlink_refused(const std::string& path) {
  return make_error(Errc::kInvalidArgument,
                    path + " is a symbolic link: refusing to write through it");
}

Error open_error(const std::string& what, const std::string& path, int err) {
  Error e = make_error(err == EACCES || err == EPERM ? Errc::kPermission : Errc::kIo,
                       what + " " + path + ": " + std::strerror(err));
  e.sys_errno = err;
  return e;
}

// lstat without following; 0, or the errno.
int lstat_of(const std::string& path, struct stat& st) {
  return ::lstat(path.c_str(), &st) == 0 ? 0 : errno;
}

}  // namespace

Status rotate_old(const std::string& path, bool* rotated) {
  if (rotated) *rotated = false;
  struct stat st{};
  if (int err = lstat_of(path, st)) {
    if (err == ENOENT) return ok_status();
    return open_error("looking at", path, err);
  }
  if (S_ISLNK(st.st_mode)) return symlink_refused(path);
  if (!S_ISREG(st.st_mode) || st.st_size == 0) return ok_status();
  const std::string old = path + ".old";
  struct stat old_st{};
  if (lstat_of(old, old_st) == 0 && S_ISLNK(old_st.st_mode)) return symlink_refused(old);
  if (::rename(path.c_str(), old.c_str()) != 0) {
    if (errno == ENOENT) return ok_status();
    return open_error("renaming " + path + " to", old, errno);
  }
  if (rotated) *rotated = true;
  return ok_status();
}

Result<OpenedOutput> open_output(const std::string& path, const OutputOpen& how) {
  OpenedOutput out;
  int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
  if (how.keep_old) {
    BPFPROF_TRY(rotate_old(path, &out.rotated));
    // What we renamed away must be replaced by a file of ours: if something
    // appeared at the path in between, refuse rather than write into it.
    if (out.rotated) flags |= O_EXCL;
  }
  int fd = ::open(path.c_str(), flags, how.mode);
  if (fd < 0) {
    const int err = errno;
    if (out.rotated) (void)::rename((path + ".old").c_str(), path.c_str());
    struct stat st{};
    if (err == ELOOP && lstat_of(path, st) == 0 && S_ISLNK(st.st_mode)) return symlink_refused(path);
    return open_error("creating", path, err);
  }
  out.fd.reset(fd);
  struct stat st{};
  if (::fstat(fd, &st) != 0) return open_error("stat", path, errno);
  out.regular = S_ISREG(st.st_mode);
  if (out.regular) {
    if (::ftruncate(fd, 0) != 0) return open_error("truncating", path, errno);
    // O_CREAT's mode does not apply to a file that already existed.
    if (how.set_mode && ::fchmod(fd, how.mode) != 0) return open_error("chmod", path, errno);
  }
  return out;
}

Status write_file(const std::string& path, std::string_view bytes) {
  const bool to_stdout = path.empty() || path == "-";
  OpenedOutput out;
  if (!to_stdout) {
    OutputOpen how;
    how.mode = 0644;
    BPFPROF_ASSIGN_OR_RETURN(out, open_output(path, how));
  }
  const int fd = to_stdout ? STDOUT_FILENO : out.fd.get();
  const std::string name = to_stdout ? std::string("stdout") : path;
  if (to_stdout) std::fflush(stdout);  // whatever stdio holds goes first
  size_t pos = 0;
  while (pos < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + pos, bytes.size() - pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return open_error("writing", name, n < 0 ? errno : ENOSPC);
    pos += static_cast<size_t>(n);
  }
  if (!to_stdout && ::close(out.fd.release()) != 0) return open_error("closing", name, errno);
  return ok_status();
}

}  // namespace bpfprof
