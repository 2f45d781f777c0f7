// SPDX-License-Identifier: Apache-2.0
#include "cli/docs.h"

#include <algorithm>

#include <fmt/format.h>

namespace bpfprof::cli {
namespace {

// What completing a value offers.
enum class Value { kNone, kFile, kDirectory, kChoices, kCommand, kOther };

struct Opt {
  std::vector<std::string> names;  // "-a", "--all-cpus"
  std::string type;                // "TEXT", "UINT", ...; "" for a flag
  std::vector<std::string> choices;  // a CLI::IsMember check's set
  std::string description;
  std::vector<std::string> excludes;  // names of options it cannot go with
  Value value = Value::kNone;
};

struct Positional {
  std::string name, description;
  bool required = false, repeated = false;
  Value value = Value::kFile;
};

// "TEXT:{text,json}" -> "TEXT" and {"text", "json"}.
void split_type(const std::string& type_name, Opt& o) {
  o.type = type_name.substr(0, type_name.find(':'));
  const size_t open = type_name.find('{'), close = type_name.rfind('}');
  if (open == std::string::npos || close == std::string::npos || close < open) return;
  std::string set = type_name.substr(open + 1, close - open - 1);
  for (size_t at = 0; at <= set.size();) {
    size_t comma = std::min(set.find(',', at), set.size());
    o.choices.push_back(set.substr(at, comma - at));
    at = comma + 1;
  }
}

std::vector<Opt> options_of(const CLI::App& cmd) {
  std::vector<Opt> out;
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->get_group().empty() || !opt->nonpositional()) continue;  // hidden, positional
    Opt o;
    for (const std::string& s : opt->get_snames()) o.names.push_back("-" + s);
    for (const std::string& l : opt->get_lnames()) o.names.push_back("--" + l);
    o.description = opt->get_description();
    if (opt->get_type_size() != 0) split_type(opt->get_type_name(), o);
    for (const CLI::Option* other : opt->get_excludes()) o.excludes.push_back(other->get_name());
    std::sort(o.excludes.begin(), o.excludes.end());
    const std::string& main = o.names.back();
    if (o.type.empty()) {
      o.value = Value::kNone;
    } else if (!o.choices.empty()) {
      o.value = Value::kChoices;
    } else if (main == "--input" || main == "--output" || main == "--kallsyms") {
      o.value = Value::kFile;
    } else if (main == "--symfs") {
      o.value = Value::kDirectory;
    } else {
      o.value = Value::kOther;
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<Positional> positionals_of(const CLI::App& cmd) {
  std::vector<Positional> out;
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->get_group().empty() || opt->nonpositional()) continue;
    Positional p;
    p.name = opt->get_name();
    p.description = opt->get_description();
    p.required = opt->get_required();
    p.repeated = opt->get_expected_max() == CLI::detail::expected_max_vector_size;
    p.value = p.name == "command" ? Value::kCommand : p.name == "program" ? Value::kOther
                                                                           : Value::kFile;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<const CLI::App*> commands_of(const CLI::App& app) { return app.get_subcommands({}); }

// roff text: backslashes and minus signs escaped (flags stay copyable), no
// line starting with a control character.
std::string roff(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out.insert(0, "\\&");
  return out;
}

std::string bold(std::string_view s) { return "\\fB" + roff(s) + "\\fR"; }
std::string italic(std::string_view s) { return "\\fI" + roff(s) + "\\fR"; }

std::string sentence(std::string s) {
  if (!s.empty() && s.back() != '.') s += '.';
  return s;
}

std::string options_section(const CLI::App& cmd) {
  std::string out = ".SH OPTIONS\n";
  for (const Opt& o : options_of(cmd)) {
    out += ".TP\n";
    for (size_t i = 0; i < o.names.size(); i++) out += (i ? ", " : "") + bold(o.names[i]);
    if (!o.type.empty()) out += " " + italic(o.type);
    out += "\n" + roff(sentence(o.description)) + "\n";
    if (!o.excludes.empty()) {
      std::string names;
      for (const std::string& e : o.excludes) names += (names.empty() ? "" : ", ") + bold(e);
      out += "Not with " + names + ".\n";
    }
  }
  return out;
}

std::string page_header(const std::string& name, std::string_view version) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  return fmt::format(".TH {} 1 \"\" \"bpfprof {}\" \"bpfprof manual\"\n", roff(upper),
                     roff(version));
}

std::string command_page(const CLI::App& app, const CLI::App& cmd, std::string_view version) {
  const std::string page = app.get_name() + "-" + cmd.get_name();
  std::string out = page_header(page, version);
  out += ".SH NAME\n" + roff(page) + " \\- " + roff(cmd.get_description()) + "\n";
  out += ".SH SYNOPSIS\n.B " + roff(app.get_name() + " " + cmd.get_name()) + "\n";
  std::string synopsis = "[" + italic("OPTIONS") + "]";
  const std::vector<Positional> positionals = positionals_of(cmd);
  for (const Positional& p : positionals) {
    std::string word = italic(p.name) + (p.repeated ? "..." : "");
    synopsis += " " + (p.required ? word : "[" + word + "]");
  }
  if (cmd.get_prefix_command()) {
    synopsis += " [[" + bold("--") + "] " + italic("command") + " [" + italic("args") + "...]]";
  }
  out += synopsis + "\n";
  out += ".SH DESCRIPTION\n" + roff(sentence(cmd.get_description())) + "\n";
  if (!cmd.get_footer().empty()) out += ".PP\n" + roff(cmd.get_footer()) + "\n";
  if (!positionals.empty()) {
    out += ".SH ARGUMENTS\n";
    for (const Positional& p : positionals) {
      out += ".TP\n" + italic(p.name) + "\n" + roff(sentence(p.description)) + "\n";
    }
  }
  out += options_section(cmd);
  out += ".SH EXIT STATUS\n0 done, 1 failed (reading, recording or writing), 2 refused (the "
         "command line, or what it asks for is not allowed or not supported here).\n";
  out += ".SH SEE ALSO\n.BR " + roff(app.get_name()) + " (1)\n";
  return out;
}

std::string main_page(const CLI::App& app, std::string_view version) {
  const std::string name = app.get_name();
  std::string summary = app.get_description();
  if (summary.starts_with(name + ": ")) summary = summary.substr(name.size() + 2);
  std::string out = page_header(name, version);
  out += ".SH NAME\n" + roff(name) + " \\- " + roff(summary) + "\n";
  out += ".SH SYNOPSIS\n.B " + roff(name) + "\n" + italic("command") + " [" + italic("OPTIONS") +
         "] [" + italic("args") + "]\n.br\n.B " + roff(name) + "\n[" + bold("--version") + "] [" +
         bold("--help") + "]\n";
  out += ".SH DESCRIPTION\n" +
         roff(name + " is " + sentence(summary) +
              " It names every BPF program (and kernel and user code) from the program "
              "load and unload events in the recording, at their time, so programs that "
              "lived a millisecond are named correctly. record writes a perf.data file "
              "that Linux perf reads; the other commands read it. Without a command, " +
              name + " prints the commands, one line each.") +
         "\n";
  out += ".SH COMMANDS\n";
  for (const CLI::App* cmd : commands_of(app)) {
    out += ".TP\n" + bold(name + "-" + cmd->get_name()) + "(1)\n" +
           roff(sentence(cmd->get_description())) + "\n";
  }
  out += options_section(app);
  out += ".SH EXIT STATUS\n.TP\n0\nDone.\n.TP\n1\nFailed while reading, recording or writing.\n"
         ".TP\n2\nRefused: a bad command line, or what it asks for is not allowed or not "
         "supported here (privileges, events).\n";
  out += ".SH FILES\n.TP\n.I perf.data\nThe recording record writes and the other commands read "
         "by default.\n";
  out += ".SH EXAMPLES\n.nf\n" +
         roff(name + " record -a -g -F 999 -o out.data -- ./load-test\n" + name +
              " report -i out.data --sort prog,sym\n" + name +
              " annotate -i out.data my_prog\n" + name + " top\n") +
         ".fi\n";
  out += ".SH SEE ALSO\n";
  for (const CLI::App* cmd : commands_of(app)) {
    out += ".BR " + roff(name + "-" + cmd->get_name()) + " (1),\n";
  }
  out += ".BR perf (1),\n.BR bpftool (8)\n";
  return out;
}

// Shell words: single-quoted.
std::string shell_quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string joined(const std::vector<std::string>& words, std::string_view sep = " ") {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : std::string(sep)) + w;
  return out;
}

// Bash: `case` arms completing the value of the previous word, one per
// action (options offering the same share an arm).
std::string bash_value_case(const std::vector<Opt>& options, const std::string& indent) {
  std::vector<std::pair<std::string, std::vector<std::string>>> arms;  // action, names
  for (const Opt& o : options) {
    if (o.value == Value::kNone) continue;
    std::string action;
    switch (o.value) {
      case Value::kFile: action = "COMPREPLY=($(compgen -f -- \"$cur\"))"; break;
      case Value::kDirectory: action = "COMPREPLY=($(compgen -d -- \"$cur\"))"; break;
      case Value::kChoices:
        action = "COMPREPLY=($(compgen -W " + shell_quoted(joined(o.choices)) + " -- \"$cur\"))";
        break;
      default: action = ":"; break;  // a number or a name: nothing to offer
    }
    auto arm = std::find_if(arms.begin(), arms.end(), [&](const auto& a) { return a.first == action; });
    if (arm == arms.end()) arm = arms.insert(arms.end(), {action, {}});
    arm->second.insert(arm->second.end(), o.names.begin(), o.names.end());
  }
  if (arms.empty()) return "";
  std::string out = indent + "case $prev in\n";
  for (const auto& [action, names] : arms) {
    out += indent + "  " + joined(names, "|") + ") " + action + "; return ;;\n";
  }
  return out + indent + "esac\n";
}

std::string value_options(const std::vector<Opt>& options) {
  std::vector<std::string> names;
  for (const Opt& o : options) {
    if (o.value != Value::kNone) names.insert(names.end(), o.names.begin(), o.names.end());
  }
  return joined(names, "|");
}

std::vector<std::string> all_names(const std::vector<Opt>& options) {
  std::vector<std::string> names;
  for (const Opt& o : options) names.insert(names.end(), o.names.begin(), o.names.end());
  return names;
}

}  // namespace

std::vector<std::string> visible_flags(const CLI::App& command) {
  return all_names(options_of(command));
}

std::vector<DocFile> man_pages(const CLI::App& app, std::string_view version) {
  std::vector<DocFile> pages;
  pages.push_back({app.get_name() + ".1", main_page(app, version)});
  for (const CLI::App* cmd : commands_of(app)) {
    pages.push_back({app.get_name() + "-" + cmd->get_name() + ".1", command_page(app, *cmd, version)});
  }
  return pages;
}

std::string bash_completion(const CLI::App& app) {
  const std::string name = app.get_name();
  std::vector<std::string> commands;
  for (const CLI::App* cmd : commands_of(app)) commands.push_back(cmd->get_name());
  std::string out = fmt::format(
      "# bash completion for {0}: its commands, their flags and flag values.\n"
      "# Generated from {0}'s command-line definition by {0}-docgen; do not edit.\n\n"
      "_{0}_run() {{\n"
      "  # The command {0} record runs, from word $1 on.\n"
      "  if declare -F _command_offset >/dev/null; then _command_offset \"$1\"; return; fi\n"
      "  if (($1 == COMP_CWORD)); then COMPREPLY=($(compgen -c -- \"$cur\"))\n"
      "  else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
      "}}\n\n"
      "_{0}() {{\n"
      "  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}}\n"
      "  local cmd= i j args=0\n"
      "  COMPREPLY=()\n"
      "  # --flag=value: bash splits at the '='\n"
      "  if [[ $cur == = ]]; then cur=; fi\n"
      "  if [[ $prev == = ]] && ((COMP_CWORD > 1)); then prev=${{COMP_WORDS[COMP_CWORD-2]}}; fi\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case ${{COMP_WORDS[i]}} in\n"
      "      -*) ;;\n"
      "      *) cmd=${{COMP_WORDS[i]}}; break ;;\n"
      "    esac\n"
      "  done\n",
      name);
  out += "  if [[ -z $cmd ]]; then\n";
  const std::vector<Opt> top = options_of(app);
  out += "    if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W " + shell_quoted(joined(all_names(top))) +
         " -- \"$cur\"))\n";
  out += "    else COMPREPLY=($(compgen -W " + shell_quoted(joined(commands)) + " -- \"$cur\")); fi\n";
  out += "    return\n  fi\n";
  out += "  case $cmd in\n";
  for (const CLI::App* cmd : commands_of(app)) {
    const std::vector<Opt> options = options_of(*cmd);
    const std::vector<Positional> positionals = positionals_of(*cmd);
    const std::string values = value_options(options);
    out += "    " + cmd->get_name() + ")\n";
    // Words before the cursor: a flag's value is skipped, "--" or the first
    // other word starts record's command, else they count as arguments.
    out += "      for ((j = i + 1; j < COMP_CWORD; j++)); do\n"
           "        case ${COMP_WORDS[j]} in\n";
    if (cmd->get_prefix_command()) out += "          --) _" + name + "_run $((j + 1)); return ;;\n";
    if (!values.empty()) {
      out += "          " + values +
             ") [[ ${COMP_WORDS[j+1]} == = ]] && j=$((j + 1)); j=$((j + 1)) ;;\n";
    }
    out += "          -*) ;;\n";
    if (cmd->get_prefix_command()) {
      out += "          *) _" + name + "_run \"$j\"; return ;;\n";
    } else {
      out += "          *) args=$((args + 1)) ;;\n";
    }
    out += "        esac\n      done\n";
    out += bash_value_case(options, "      ");
    out += "      if [[ $cur == -* ]]; then\n        COMPREPLY=($(compgen -W " +
           shell_quoted(joined(all_names(options))) + " -- \"$cur\"))\n";
    if (cmd->get_prefix_command()) {
      out += "      else\n        COMPREPLY=($(compgen -c -- \"$cur\"))\n";
    } else if (!positionals.empty()) {
      // The positional the cursor is at (the last one repeats).
      out += "      else\n        case $args in\n";
      for (size_t k = 0; k < positionals.size(); k++) {
        const Positional& p = positionals[k];
        const bool last = k + 1 == positionals.size();
        std::string action;
        switch (p.value) {
          case Value::kFile: action = "COMPREPLY=($(compgen -f -- \"$cur\"))"; break;
          case Value::kCommand:
            action = "COMPREPLY=($(compgen -W " + shell_quoted(joined(commands)) + " -- \"$cur\"))";
            break;
          default: action = ":"; break;
        }
        out += "          " + (last && p.repeated ? std::string("*") : std::to_string(k)) + ") " +
               action + " ;;\n";
      }
      out += "        esac\n";
    }
    out += "      fi\n      ;;\n";
  }
  out += "  esac\n}\n\n";
  out += fmt::format("complete -F _{0} {0}\n", name);
  return out;
}

std::string zsh_completion(const CLI::App& app) {
  const std::string name = app.get_name();
  // An _arguments spec per option: '(-C --cpu)'{-C+,--cpu=}'[Only these CPUs]:TEXT:'
  auto specs = [&](const std::vector<Opt>& options) {
    std::string out;
    for (const Opt& o : options) {
      std::string desc;
      for (char c : o.description) {
        if (c == '[' || c == ']' || c == ':' || c == '\\') desc += '\\';
        desc += c;
      }
      std::vector<std::string> forms;
      for (const std::string& n : o.names) {
        forms.push_back(o.value == Value::kNone ? n : n.starts_with("--") ? n + "=" : n + "+");
      }
      std::vector<std::string> exclusive = o.names;
      for (const std::string& e : o.excludes) exclusive.push_back(e);
      const bool help = o.names.back() == "--help" || o.names.back() == "--version";
      std::string spec = "'(" + (help ? std::string("- *") : joined(exclusive)) + ")'";
      spec += forms.size() > 1 ? "{" + joined(forms, ",") + "}" : forms[0];
      std::string action;
      switch (o.value) {
        case Value::kNone: break;
        case Value::kFile: action = ":file:_files"; break;
        case Value::kDirectory: action = ":directory:_files -/"; break;
        case Value::kChoices: action = ":" + o.type + ":(" + joined(o.choices) + ")"; break;
        default: action = ":" + o.type + ": "; break;
      }
      out += " \\\n    " + spec + shell_quoted("[" + desc + "]" + action);
    }
    return out;
  };
  std::vector<std::string> commands, names;
  for (const CLI::App* cmd : commands_of(app)) {
    commands.push_back(shell_quoted(cmd->get_name() + ":" + cmd->get_description()));
    names.push_back(cmd->get_name());
  }
  std::string out = fmt::format(
      "#compdef {0}\n"
      "# zsh completion for {0}: its commands, their flags and flag values.\n"
      "# Generated from {0}'s command-line definition by {0}-docgen; do not edit.\n\n"
      "_{0}() {{\n"
      "  local curcontext=$curcontext state line ret=1\n"
      "  typeset -A opt_args\n"
      "  _arguments -C{1} \\\n    '1: :->command' \\\n    '*:: :->args' && return\n"
      "  case $state in\n"
      "    command)\n"
      "      local -a commands=(\n        {2}\n      )\n"
      "      _describe -t commands '{0} command' commands && ret=0\n"
      "      ;;\n"
      "    args)\n"
      "      curcontext=${{curcontext%:*:*}}:{0}-$words[1]:\n"
      "      case $words[1] in\n",
      name, specs(options_of(app)), joined(commands, "\n        "));
  for (const CLI::App* cmd : commands_of(app)) {
    std::string rest;
    if (cmd->get_prefix_command()) {
      rest = " \\\n    '*::command:_normal'";
    } else {
      const std::vector<Positional> positionals = positionals_of(*cmd);
      for (size_t k = 0; k < positionals.size(); k++) {
        const Positional& p = positionals[k];
        std::string action = p.value == Value::kFile      ? "_files"
                             : p.value == Value::kCommand ? "(" + joined(names) + ")"
                                                          : " ";
        std::string pos = p.repeated ? "*" : std::to_string(k + 1);
        rest += " \\\n    " + shell_quoted(pos + ":" + p.name + ":" + action);
      }
    }
    out += "        " + cmd->get_name() + ")\n          _arguments -s -S" + specs(options_of(*cmd)) +
           rest + " && ret=0\n          ;;\n";
  }
  out += "      esac\n      ;;\n  esac\n  return ret\n}\n\n";
  out += fmt::format("_{0} \"$@\"\n", name);
  return out;
}

}  // namespace bpfprof::cli
