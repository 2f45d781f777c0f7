// SPDX-License-Identifier: Apache-2.0
// bpfprof-docgen OUTDIR: writes the man pages (plain and gzipped) and the
// bash and zsh completions from the same CLI11 definition bpfprof parses
// with, under OUTDIR in the layout they are installed in:
//   man/man1/bpfprof.1[.gz], man/man1/bpfprof-COMMAND.1[.gz],
//   bash-completion/completions/bpfprof, zsh/vendor-completions/_bpfprof.
// A build-time tool; not installed.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/build_info.h"
#include "cli/app.h"
#include "cli/docs.h"
#include "export/gzip.h"

namespace {

// Writes only when the bytes differ, so an unchanged page keeps its time.
bool write(const std::filesystem::path& path, const std::string& text) {
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::stringstream old;
    old << in.rdbuf();
    if (old.str() == text) return true;
  }
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "bpfprof-docgen: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: bpfprof-docgen OUTDIR\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  bpfprof::cli::CommandLine cl = bpfprof::cli::make_command_line();
  bool ok = true;
  for (const auto& page : bpfprof::cli::man_pages(*cl.app, bpfprof::build_info().version)) {
    const std::filesystem::path path = out / "man/man1" / page.name;
    auto gz = bpfprof::exporter::gzip_compress(page.text);
    if (!gz.ok()) {
      std::fprintf(stderr, "bpfprof-docgen: %s\n", gz.error().to_string().c_str());
      return 1;
    }
    ok &= write(path, page.text);
    ok &= write(path.string() + ".gz", *gz);
  }
  ok &= write(out / "bash-completion/completions/bpfprof", bpfprof::cli::bash_completion(*cl.app));
  ok &= write(out / "zsh/vendor-completions/_bpfprof", bpfprof::cli::zsh_completion(*cl.app));
  return ok ? 0 : 1;
}
