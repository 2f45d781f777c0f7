// SPDX-License-Identifier: Apache-2.0
// The generated man pages and completions (build/share, as installed) against
// the parser: each page documents exactly the flags its command accepts
// (hidden ones left out), and bash completes exactly those.
#include "cli/docs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cli/app.h"
#include "export/gzip.h"
#include "testing/paths.h"
#include "testing/subprocess.h"

namespace bpfprof::cli {
namespace {

const std::string kDocs = BPFPROF_DOCS_DIR;
using Names = std::set<std::string>;

// What the parser accepts, asked of CLI11 directly: visible and hidden flags.
void parser_flags(const CLI::App& cmd, Names& visible, Names& hidden) {
  for (const CLI::Option* opt : cmd.get_options()) {
    if (!opt->nonpositional()) continue;
    Names& into = opt->get_group().empty() ? hidden : visible;
    for (const std::string& s : opt->get_snames()) into.insert("-" + s);
    for (const std::string& l : opt->get_lnames()) into.insert("--" + l);
  }
}

// The flags in a page's OPTIONS section: the bold words of each .TP head line.
Names page_flags(const std::string& page) {
  Names flags;
  const size_t begin = page.find("\n.SH OPTIONS\n");
  if (begin == std::string::npos) return flags;
  const size_t end = page.find("\n.SH ", begin + 1);
  std::istringstream in(page.substr(begin, end - begin));
  std::string line;
  bool head = false;
  while (std::getline(in, line)) {
    if (head) {
      line = std::regex_replace(line, std::regex(R"(\\-)"), "-");
      static const std::regex bold(R"(\\fB(-[^\\]*)\\fR)");
      for (std::sregex_iterator it(line.begin(), line.end(), bold), e; it != e; ++it) {
        flags.insert((*it)[1]);
      }
    }
    head = line == ".TP";
  }
  return flags;
}

// Runs `_bpfprof` in a clean bash for `words` (the last one being completed).
std::vector<std::string> bash_complete(const std::vector<std::string>& words,
                                       std::string* complete_p = nullptr) {
  std::string array;
  for (const std::string& w : words) array += " '" + w + "'";
  auto r = testing::run({"bash", "--norc", "--noprofile", "-c",
                         "source " + kDocs + "/bash-completion/completions/bpfprof && "
                         "complete -p bpfprof >&2 && COMP_WORDS=(" + array + ") && "
                         "COMP_CWORD=" + std::to_string(words.size() - 1) +
                         " && { _bpfprof; printf '%s\\n' \"${COMPREPLY[@]}\"; }"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (complete_p) *complete_p = r.err;
  std::vector<std::string> out;
  std::istringstream in(r.out);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(l);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> sorted(const Names& n) { return {n.begin(), n.end()}; }

TEST(DocsTest, EveryCommandHasAPageDocumentingExactlyItsFlags) {
  CommandLine cl = make_command_line();
  std::vector<const CLI::App*> commands{cl.app.get()};
  for (const CLI::App* sub : cl.app->get_subcommands({})) commands.push_back(sub);
  Names expected_files;
  const std::string main_page = testing::read_file_text(kDocs + "/man/man1/bpfprof.1");
  for (const CLI::App* cmd : commands) {
    const std::string name =
        cmd == cl.app.get() ? "bpfprof" : "bpfprof-" + cmd->get_name();
    expected_files.insert(name + ".1");
    expected_files.insert(name + ".1.gz");
    const std::string path = kDocs + "/man/man1/" + name + ".1";
    const std::string page = testing::read_file_text(path);
    ASSERT_FALSE(page.empty()) << path;
    Names visible, hidden;
    parser_flags(*cmd, visible, hidden);
    const Names documented = page_flags(page);
    EXPECT_EQ(documented, visible) << path;
    for (const std::string& h : hidden) EXPECT_EQ(documented.count(h), 0u) << h << " in " << path;
    for (const std::string& f : documented) {
      EXPECT_NE(cmd->get_option_no_throw(f), nullptr) << f << " in " << path;
    }
    if (cmd != cl.app.get()) {
      EXPECT_NE(page.find("\n.SH NAME\nbpfprof\\-" + cmd->get_name() + " \\- "), std::string::npos)
          << page;
      EXPECT_NE(main_page.find(".BR bpfprof\\-" + cmd->get_name() + " (1)"), std::string::npos)
          << "bpfprof(1) does not list " << name;
    }
    // The installed, gzipped page is the same page.
    auto gz = exporter::gzip_decompress(testing::read_file_text(path + ".gz"));
    ASSERT_TRUE(gz.ok()) << path << ".gz: " << gz.error().to_string();
    EXPECT_EQ(*gz, page) << path;
  }
  Names files;
  for (const auto& e : std::filesystem::directory_iterator(kDocs + "/man/man1")) {
    files.insert(e.path().filename());
  }
  EXPECT_EQ(files, expected_files);
  // record's hidden measurement flags are the case the filter exists for.
  Names visible, hidden;
  parser_flags(*cl.app->get_subcommand("record"), visible, hidden);
  EXPECT_EQ(hidden, (Names{"--capture-ring-bytes", "--enricher-sched", "--enricher-threads"}));
}

TEST(DocsTest, GroffRendersEveryPageWithoutWarnings) {
  for (const auto& e : std::filesystem::directory_iterator(kDocs + "/man/man1")) {
    if (e.path().extension() != ".1") continue;
    auto r = testing::run({"groff", "-man", "-Tutf8", "-ww", "-P-cbou", e.path()});
    EXPECT_EQ(r.exit_code, 0) << e.path() << ": " << r.err;
    EXPECT_EQ(r.err, "") << e.path();
    EXPECT_NE(r.out.find("OPTIONS"), std::string::npos) << r.out;
  }
}

TEST(DocsTest, BashCompletesCommandsAndEachCommandsFlags) {
  CommandLine cl = make_command_line();
  std::string complete_p;
  Names commands;
  for (const CLI::App* sub : cl.app->get_subcommands({})) commands.insert(sub->get_name());
  EXPECT_EQ(bash_complete({"bpfprof", ""}, &complete_p), sorted(commands));
  EXPECT_EQ(complete_p, "complete -F _bpfprof bpfprof\n");
  Names top, top_hidden;
  parser_flags(*cl.app, top, top_hidden);
  EXPECT_EQ(bash_complete({"bpfprof", "-"}), sorted(top));
  for (const CLI::App* sub : cl.app->get_subcommands({})) {
    Names visible, hidden;
    parser_flags(*sub, visible, hidden);
    EXPECT_EQ(bash_complete({"bpfprof", sub->get_name(), "-"}), sorted(visible)) << sub->get_name();
    // After a flag's value, flags again.
    EXPECT_EQ(bash_complete({"bpfprof", "-h", sub->get_name(), "-"}), sorted(visible))
        << sub->get_name();
  }
}

TEST(DocsTest, BashCompletesValuesFilesAndRecordsCommand) {
  EXPECT_EQ(bash_complete({"bpfprof", "report", "--format", ""}),
            (std::vector<std::string>{"json", "text"}));
  EXPECT_EQ(bash_complete({"bpfprof", "report", "--format", "=", "j"}),
            (std::vector<std::string>{"json"}));
  EXPECT_EQ(bash_complete({"bpfprof", "help", "rep"}), (std::vector<std::string>{"report"}));
  EXPECT_EQ(bash_complete({"bpfprof", "record", "-F", ""}), std::vector<std::string>{});
  testing::TempDir dir;
  std::ofstream(dir.file("one.data")) << "x";
  std::ofstream(dir.file("two.data")) << "x";
  EXPECT_EQ(bash_complete({"bpfprof", "report", "-i", dir.file("o")}),
            (std::vector<std::string>{dir.file("one.data")}));
  EXPECT_EQ(bash_complete({"bpfprof", "diff", "-q", dir.file("t")}),
            (std::vector<std::string>{dir.file("two.data")}));
  // record's command: after "--" and after the first word that is not a flag
  // or a flag's value.
  for (const auto& words : {std::vector<std::string>{"bpfprof", "record", "-a", "--", "bpfprof-no"},
                            std::vector<std::string>{"bpfprof", "record", "-o", "x", "bpfprof-no"}}) {
    EXPECT_EQ(bash_complete(words), std::vector<std::string>{});
  }
  auto with_bash = bash_complete({"bpfprof", "record", "-o", "x.data", "--", "bas"});
  EXPECT_NE(std::find(with_bash.begin(), with_bash.end(), "bash"), with_bash.end());
  auto args = bash_complete({"bpfprof", "record", "-a", "--", "ls", dir.file("o")});
  EXPECT_EQ(args, (std::vector<std::string>{dir.file("one.data")}));
}

// An interactive zsh (no startup files) in a detached tmux on its own
// socket, with the generated completion in its fpath and compinit run.
class ZshInTmux {
 public:
  ZshInTmux() : socket_("bpfprof-docs-" + std::to_string(::getpid())) {
    auto r = tmux({"new-session", "-d", "-x", "250", "-y", "80",
                   "env -i HOME=" + home_.path() + " TERM=xterm PATH=" + BPFPROF_BIN_DIR +
                       ":/usr/bin:/bin zsh -f"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    type("fpath=(" + kDocs + "/zsh/vendor-completions $fpath); autoload -Uz compinit; "
         "compinit -u -d " + home_.file("zcompdump") + "; PS1='> '");
    tmux({"send-keys", "Enter"});
    ready();
  }
  ~ZshInTmux() { tmux({"kill-server"}); }

  // Types `line`, presses Tab and returns the screen once it shows every
  // one of `want` (or after 20 s), then clears the line and the screen.
  std::string complete(const std::string& line, const std::vector<std::string>& want) {
    type(line);
    tmux({"send-keys", "Tab"});
    std::string screen = wait_for(want);
    tmux({"send-keys", "C-u"});
    type("clear");
    tmux({"send-keys", "Enter"});
    ready();
    return screen;
  }

 private:
  testing::RunResult tmux(std::vector<std::string> args) {
    args.insert(args.begin(), {"tmux", "-L", socket_});
    return testing::run(args);
  }
  void type(const std::string& text) { tmux({"send-keys", "-l", text}); }
  std::string wait_for(const std::vector<std::string>& want) {
    std::string screen;
    for (int i = 0; i < 200; i++) {
      screen = tmux({"capture-pane", "-p"}).out;
      if (std::all_of(want.begin(), want.end(),
                      [&](const std::string& w) { return screen.find(w) != std::string::npos; })) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return screen;
  }
  // The shell has run everything typed so far: it printed a marker its
  // command line does not contain verbatim.
  void ready() {
    type("print zsh-ready-$((6 * 7))");
    tmux({"send-keys", "Enter"});
    EXPECT_NE(wait_for({"zsh-ready-42"}).find("zsh-ready-42"), std::string::npos);
    tmux({"send-keys", "-l", "clear"});
    tmux({"send-keys", "Enter"});
    wait_for({});
  }

  testing::TempDir home_;
  std::string socket_;
};

TEST(DocsTest, ZshCompletesCommandsAndEachCommandsLongFlags) {
  CommandLine cl = make_command_line();
  ZshInTmux zsh;
  std::vector<std::string> commands;
  for (const CLI::App* sub : cl.app->get_subcommands({})) {
    commands.push_back(sub->get_name() + "  ");
  }
  const std::string listed = zsh.complete("bpfprof ", commands);
  for (const std::string& c : commands) EXPECT_NE(listed.find(c), std::string::npos) << c << listed;
  for (const CLI::App* sub : cl.app->get_subcommands({})) {
    Names visible, hidden;
    parser_flags(*sub, visible, hidden);
    std::vector<std::string> want;
    for (const std::string& f : visible) {
      if (f.starts_with("--")) want.push_back("\n" + f + " ");
    }
    // A lone long flag is completed in place instead of listed.
    if (want.size() < 2) continue;
    const std::string screen = "\n" + zsh.complete("bpfprof " + sub->get_name() + " --", want);
    for (const std::string& w : want) {
      EXPECT_NE(screen.find(w), std::string::npos) << sub->get_name() << ": " << w << screen;
    }
    for (const std::string& h : hidden) {
      EXPECT_EQ(screen.find(h), std::string::npos) << sub->get_name() << ": " << h;
    }
  }
  const std::string formats = zsh.complete("bpfprof report --format ", {"json", "text"});
  EXPECT_NE(formats.find("json"), std::string::npos) << formats;
}

}  // namespace
}  // namespace bpfprof::cli
