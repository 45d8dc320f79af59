// expnet completion bash: a bash completion script generated at run time from
// the CLI11 command tree itself, so it always lists exactly the subcommands and
// options of the expnet it came from.
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"

namespace expnet::cli {
namespace {

// How the value of an option (or of a command's positional arguments) completes:
// "file", "dir", "none" (numbers, free text) or "words W1 W2 ...".
std::string value_completion(const CLI::Option& option) {
  if (option.check_lname("device")) return "words cpu cuda";
  // CLI11 appends its validators' descriptions to the type name: "TEXT:{beam,greedy,sample}",
  // "TEXT:FILE", "TEXT:DIR", "INT:POSITIVE", "INT in [1 - 64]".
  const std::string type = option.get_type_name();
  const auto open = type.find('{');
  const auto close = type.find('}', open);
  if (open != std::string::npos && close != std::string::npos) {
    std::string words = type.substr(open + 1, close - open - 1);
    for (char& c : words)
      if (c == ',') c = ' ';
    return "words " + words;
  }
  for (const char* number : {"INT", "UINT", "FLOAT", "NUMBER", "BOOLEAN"})
    if (type.rfind(number, 0) == 0) return "none";
  if (type.find(":DIR") != std::string::npos) return "dir";
  return "file";
}

bool takes_value(const CLI::Option& option) { return option.get_items_expected_max() > 0; }

// Options of `command`, those of its option groups (nameless subcommands) included;
// hidden options (empty group) are left out as `--help` leaves them out.
std::vector<CLI::Option*> visible_options(CLI::App* command) {
  auto options = command->get_options([](CLI::Option* option) { return !option->get_group().empty(); });
  for (auto* group : command->get_subcommands([](CLI::App* sub) { return sub->get_name().empty(); })) {
    const auto inner = visible_options(group);
    options.insert(options.end(), inner.begin(), inner.end());
  }
  return options;
}

std::vector<CLI::App*> named_subcommands(CLI::App* command) {
  return command->get_subcommands(
      // group "": hidden from --help (a host's side, started by ssh), so not offered either
      [](CLI::App* sub) { return !sub->get_name().empty() && !sub->get_disabled() && !sub->get_group().empty(); });
}

// Single-quoted for bash, so no name or choice can break the script.
std::string shell_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct CompletionTables {
  std::ostringstream subcommands, options, values, positionals;
};

// One entry of a bash associative array: ['key']='value'
std::string table_entry(const std::string& key, const std::string& value) {
  return "  [" + shell_quoted(key) + "]=" + shell_quoted(value) + "\n";
}

void describe(CLI::App* command, const std::string& path, CompletionTables& tables) {
  std::string subcommand_names, option_names;
  for (auto* sub : named_subcommands(command))
    subcommand_names += (subcommand_names.empty() ? "" : " ") + sub->get_name();
  for (auto* option : visible_options(command)) {
    if (!option->nonpositional()) {  // a positional argument: no name to complete, only its value
      if (takes_value(*option)) tables.positionals << table_entry(path, value_completion(*option));
      continue;
    }
    for (const auto& name : option->get_lnames()) {
      option_names += (option_names.empty() ? "--" : " --") + name;
      if (takes_value(*option)) tables.values << table_entry(path + " --" + name, value_completion(*option));
    }
  }
  if (!subcommand_names.empty()) tables.subcommands << table_entry(path, subcommand_names);
  if (!option_names.empty()) tables.options << table_entry(path, option_names);
  for (auto* sub : named_subcommands(command)) describe(sub, path + " " + sub->get_name(), tables);
}

// The completion function itself does not depend on the tree: it follows the
// words typed so far down the tables, then completes a value, an option or a subcommand.
constexpr const char* kCompletionFunction = R"bash(
# $1: file, dir, none or "words W1 W2 ..."; $2: the word being completed.
_expnet_complete_value() {
  case $1 in
    file) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "$2") ;;
    dir) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "$2") ;;
    words\ *) mapfile -t COMPREPLY < <(compgen -W "${1#words }" -- "$2") ;;
    *) COMPREPLY=() ;;
  esac
}

_expnet() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  # --option=value: bash splits the word at '=' (COMP_WORDBREAKS).
  if [[ $cur == "=" ]]; then
    cur=
  elif [[ $prev == "=" ]] && ((COMP_CWORD > 1)); then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  fi

  # Follow the subcommands typed so far, stepping over the values of options.
  local command=expnet word i
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -* ]]; then
      [[ -n ${_expnet_values["$command $word"]+set} ]] && ((i++))
    elif [[ " ${_expnet_subcommands[$command]} " == *" $word "* ]]; then
      command+=" $word"
    fi
  done

  if [[ $prev == -* && -n ${_expnet_values["$command $prev"]+set} ]]; then
    _expnet_complete_value "${_expnet_values["$command $prev"]}" "$cur"
  elif [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${_expnet_options[$command]}" -- "$cur")
  elif [[ -n ${_expnet_subcommands[$command]} ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${_expnet_subcommands[$command]}" -- "$cur")
  elif [[ -n ${_expnet_positionals[$command]} ]]; then
    _expnet_complete_value "${_expnet_positionals[$command]}" "$cur"
  else
    mapfile -t COMPREPLY < <(compgen -W "${_expnet_options[$command]}" -- "$cur")
  fi
}

complete -F _expnet expnet
)bash";

std::string bash_completion_script(CLI::App& root) {
  CompletionTables tables;
  describe(&root, "expnet", tables);
  std::ostringstream script;
  // declare -g: bash-completion sources this file inside a function, where a
  // plain declare would make the tables local to it.
  script << "# bash completion for expnet, generated by `expnet completion bash` from its command tree.\n"
         << "# Load it with: source <(expnet completion bash)\n\n"
         << "# Subcommands and --options of each command, by command path.\n"
         << "declare -gA _expnet_subcommands=(\n" << tables.subcommands.str() << ")\n"
         << "declare -gA _expnet_options=(\n" << tables.options.str() << ")\n"
         << "# The value each option takes (flags are absent): file, dir, none or \"words W1 W2 ...\".\n"
         << "declare -gA _expnet_values=(\n" << tables.values.str() << ")\n"
         << "# The positional arguments of the commands that take some, completed the same way.\n"
         << "declare -gA _expnet_positionals=(\n" << tables.positionals.str() << ")\n"
         << kCompletionFunction;
  return script.str();
}

const bool registered = register_command({"completion", 300, [](CLI::App& root) {
  auto* completion = command_group(root, "completion", "Shell completion scripts, generated from this command tree");
  // No --threads/--device here: printing the script never touches LibTorch.
  auto* bash = completion->add_subcommand("bash", "Print the bash completion script: source <(expnet completion bash)");
  bash->callback([&root] { std::cout << bash_completion_script(root); });
}});

}  // namespace
}  // namespace expnet::cli
