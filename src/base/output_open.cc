// SPDX-License-Identifier: Apache-2.0
#include "base/output_open.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <random>

namespace bpfprof {
namespace {

// Links followed while opening one output's directory, as the kernel's limit.
constexpr int kMaxLinks = 40;

Error refused(const std::string& what) { return make_error(Errc::kInvalidArgument, what); }

Error sys_error(const std::string& what, const std::string& path, int err) {
  Error e = make_error(err == EACCES || err == EPERM ? Errc::kPermission : Errc::kIo,
                       what + " " + path + ": " + std::strerror(err));
  e.sys_errno = err;
  return e;
}

bool trusted_owner(uid_t uid) { return uid == 0 || uid == ::geteuid(); }

// Could a user other than root and us have put a link into `dir`, or swap
// the one there? Not if we or root own the directory and nobody else may
// write it, or it is sticky (then only the link's owner may replace it).
bool dir_guarded(const struct stat& dir) {
  return trusted_owner(dir.st_uid) &&
         ((dir.st_mode & (S_IWGRP | S_IWOTH)) == 0 || (dir.st_mode & S_ISVTX) != 0);
}

std::deque<std::string> components(std::string_view path) {
  std::deque<std::string> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string_view::npos) slash = path.size();
    std::string_view c = path.substr(pos, slash - pos);
    if (!c.empty() && c != ".") out.emplace_back(c);
    pos = slash + 1;
  }
  return out;
}

int open_dir_at(int at, const char* name) {
  return ::openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

const char* kind_of(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISCHR(mode)) return "a device outside /dev";
  return "not a regular file";
}

// What stands at the output's name, refused unless it is absent, a regular
// file or a device under /dev. Returns ENOENT, 0 (`st` filled), or an error.
Result<int> look_at_leaf(const OutputDir& dir, const std::string& path, struct stat& st) {
  if (::fstatat(dir.fd.get(), dir.leaf.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return ENOENT;
    return sys_error("looking at", path, errno);
  }
  if (S_ISLNK(st.st_mode)) return refused(path + " is a symbolic link: refusing to write through it");
  if (S_ISDIR(st.st_mode)) return refused(path + " is a directory");
  if (S_ISREG(st.st_mode)) return 0;
  if (S_ISCHR(st.st_mode) && path.starts_with("/dev/")) return 0;
  return refused(path + " is " + kind_of(st.st_mode) +
                 ": refusing to write to it");
}

// Moves a regular file at the name aside: to name.old with keep_old (when it
// is not empty), else away. rename(2) and unlink(2) act on the name, never
// on a link's target, and never write a byte into the file.
Status move_aside(const OutputDir& dir, const std::string& path, const struct stat& st,
                  bool keep_old, bool& rotated) {
  const int d = dir.fd.get();
  if (!keep_old || st.st_size == 0) {
    if (::unlinkat(d, dir.leaf.c_str(), 0) != 0 && errno != ENOENT)
      return sys_error("removing the previous", path, errno);
    return ok_status();
  }
  const std::string old = dir.leaf + ".old";
  struct stat old_st{};
  if (::fstatat(d, old.c_str(), &old_st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(old_st.st_mode))
    return refused(path + ".old is a symbolic link: refusing to write through it");
  if (::renameat(d, dir.leaf.c_str(), d, old.c_str()) != 0) {
    if (errno == ENOENT) return ok_status();
    return sys_error("renaming " + path + " to", path + ".old", errno);
  }
  rotated = true;
  return ok_status();
}

Result<UniqueFd> create_new(const OutputDir& dir, const std::string& name, const std::string& path,
                            mode_t mode) {
  int fd = ::openat(dir.fd.get(), name.c_str(),
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd >= 0) return UniqueFd(fd);
  if (errno == EEXIST)
    return refused(path + " appeared while bpfprof was creating it: refusing to write into a "
                   "file it did not create");
  return sys_error("creating", path, errno);
}

Status write_all(int fd, std::string_view bytes, const std::string& name) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + pos, bytes.size() - pos);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return sys_error("writing", name, n < 0 ? errno : ENOSPC);
    pos += static_cast<size_t>(n);
  }
  return ok_status();
}

}  // namespace

Result<OutputDir> open_output_dir(const std::string& path) {
  std::deque<std::string> todo = components(path);
  if (todo.empty() || path.ends_with('/') || todo.back() == "..")
    return refused(path.empty() ? std::string("the output path is empty")
                                : path + " names a directory, not a file");
  OutputDir out;
  out.leaf = todo.back();
  todo.pop_back();
  UniqueFd cur(::open(path.starts_with('/') ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!cur.valid()) return sys_error("opening the directory of", path, errno);
  std::string walked = path.starts_with('/') ? "" : ".";  // for messages
  int links = 0;
  while (!todo.empty()) {
    const std::string c = std::move(todo.front());
    todo.pop_front();
    const std::string here = walked + "/" + c;
    int fd = open_dir_at(cur.get(), c.c_str());
    if (fd >= 0) {
      cur.reset(fd);
      walked = here;
      continue;
    }
    const int err = errno;
    struct stat st{};
    if ((err != ELOOP && err != ENOTDIR) ||
        ::fstatat(cur.get(), c.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode))
      return sys_error("creating " + path + ": opening", here, err);
    struct stat dir_st{};
    if (::fstat(cur.get(), &dir_st) != 0) return sys_error("looking at", walked, errno);
    if (!trusted_owner(st.st_uid) || !dir_guarded(dir_st))
      return refused(here + " is a symbolic link another user could have planted (owner uid " +
                     std::to_string(st.st_uid) +
                     ", in a directory others can write): refusing to follow it");
    if (++links > kMaxLinks) return sys_error("creating " + path + ": opening", here, ELOOP);
    char target[4096];
    ssize_t n = ::readlinkat(cur.get(), c.c_str(), target, sizeof target - 1);
    if (n <= 0) return sys_error("reading the link", here, n < 0 ? errno : EINVAL);
    std::string_view t(target, static_cast<size_t>(n));
    std::deque<std::string> more = components(t);
    todo.insert(todo.begin(), more.begin(), more.end());
    if (t.starts_with('/')) {
      cur.reset(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
      if (!cur.valid()) return sys_error("opening", "/", errno);
    }
  }
  out.fd = std::move(cur);
  return out;
}

Result<OpenedOutput> open_output(const std::string& path, const OutputOpen& how) {
  OpenedOutput out;
  BPFPROF_ASSIGN_OR_RETURN(out.dir, open_output_dir(path));
  struct stat st{};
  BPFPROF_ASSIGN_OR_RETURN(int found, look_at_leaf(out.dir, path, st));
  if (found == 0 && S_ISCHR(st.st_mode)) {
    int fd = ::openat(out.dir.fd.get(), out.dir.leaf.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return sys_error("opening", path, errno);
    out.fd.reset(fd);
    out.regular = false;
    return out;
  }
  if (found == 0) BPFPROF_TRY(move_aside(out.dir, path, st, how.keep_old, out.rotated));
  Result<UniqueFd> fd = create_new(out.dir, out.dir.leaf, path, how.mode);
  if (!fd.ok()) {
    abandon_output(out);
    return std::move(fd).error();
  }
  out.fd = std::move(*fd);
  return out;
}

void abandon_output(OpenedOutput& out) {
  const bool created = out.fd.valid();
  out.fd.reset();
  if (!out.dir.fd.valid()) return;
  const int d = out.dir.fd.get();
  if (created && out.regular) (void)::unlinkat(d, out.dir.leaf.c_str(), 0);
  // rename(2) puts the previous file back without following any link.
  if (out.rotated)
    (void)::renameat(d, (out.dir.leaf + ".old").c_str(), d, out.dir.leaf.c_str());
  out.rotated = false;
}

Status write_file(const std::string& path, std::string_view bytes) {
  if (path.empty() || path == "-") {
    std::fflush(stdout);  // whatever stdio holds goes first
    return write_all(STDOUT_FILENO, bytes, "stdout");
  }
  BPFPROF_ASSIGN_OR_RETURN(OutputDir dir, open_output_dir(path));
  struct stat st{};
  BPFPROF_ASSIGN_OR_RETURN(int found, look_at_leaf(dir, path, st));
  if (found == 0 && S_ISCHR(st.st_mode)) {
    UniqueFd fd(::openat(dir.fd.get(), dir.leaf.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return sys_error("opening", path, errno);
    return write_all(fd.get(), bytes, path);
  }
  // A new file beside the name, renamed over it once complete.
  std::random_device rd;
  std::string tmp;
  Result<UniqueFd> fd = make_error(Errc::kInternal, "no temporary name");
  for (int tries = 0; tries < 16; ++tries) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "%08x", rd());
    tmp = "." + dir.leaf + ".bpfprof-" + suffix;
    fd = create_new(dir, tmp, path, 0600);
    if (fd.ok() || fd.error().code != Errc::kInvalidArgument) break;
  }
  if (!fd.ok()) return std::move(fd).error();
  const int d = dir.fd.get();
  Status s = write_all(fd->get(), bytes, path);
  if (s.ok() && ::close(fd->release()) != 0) s = sys_error("closing", path, errno);
  if (s.ok() && ::renameat(d, tmp.c_str(), d, dir.leaf.c_str()) != 0)
    s = sys_error("renaming a new file to", path, errno);
  if (!s.ok()) (void)::unlinkat(d, tmp.c_str(), 0);
  return s;
}

}  // namespace bpfprof
