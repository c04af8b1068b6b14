// The mlakit CLI: subcommands register themselves (one file each); each declares its arguments on
// an Args (CLI11 underneath) and parses once. Every mistake — an unknown option, a typo, a missing
// value, a value given to a flag (--check=0), an extra positional, a number out of range, a
// single-value option given twice — becomes a message naming the argument and exit code 2; the
// root cause (an unknown option, which shifts how everything after it reads) is reported first.
// CLI11 is included by args.cpp alone (its header costs ~8 s of compile time per file).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace mlakit::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // ran, but something failed (verification, device error)
constexpr int kExitUsage = 2;    // bad arguments

class Args {
 public:
  // `command`: "run" (for messages); `argv`: the arguments after it.
  Args(std::string command, std::vector<std::string> argv);
  ~Args();
  Args(const Args&) = delete;
  Args& operator=(const Args&) = delete;

  // Declarations, before parse(). Names are spelled as on the command line ("--t", "--no-verify").
  void positional(const std::string& name, std::string* out);  // at most one, optional
  void flag(const std::string& name, bool* out);               // no value; --name=x is an error
  void text(const std::string& name, std::string* out);        // --name VALUE or --name=VALUE
  // An integer within [lo, hi]: "--t: expected an integer, got 'abc'", "... a value in [1, 8], got 0".
  void integer(const std::string& name, long long* out, long long lo, long long hi);
  // One of `choices`, spelled exactly: "--kv: expected one of bf16, fp8, got 'FP8'".
  void choice(const std::string& name, std::string* out, const std::vector<std::string>& choices);

  // Parses the arguments. False when --help was given or the command line has errors.
  bool parse();
  bool help() const { return help_; }
  // Whether the option appeared on the command line.
  bool given(const std::string& name) const;

  // Errors found after parsing (a suite that does not exist, options that exclude each other).
  void error(const std::string& message) { errors_.push_back(message); }
  bool ok() const { return errors_.empty(); }
  // --help: prints `usage` to stdout, returns kExitOk. Otherwise prints every error ("mlakit:
  // <error>") and the usage to stderr, returns kExitUsage.
  int finish(const std::string& usage) const;

 private:
  void reject_flag_values();
  void reject_repeats();
  void report_extras();
  std::string suggest(const std::string& unknown) const;

  std::string command_;
  std::vector<std::string> argv_;
  std::unique_ptr<CLI::App> app_;
  std::vector<std::string> names_;  // every declared option, "--t"
  std::vector<std::string> flags_;  // the declared flags
  std::vector<std::string> single_;  // the options that take one value (text, integer, choice)
  std::vector<std::string> errors_;
  bool help_ = false;
  bool has_positional_ = false;
};

struct Command {
  const char* name;
  const char* summary;  // one line for `mlakit --help`
  int (*run)(Args& args);
};

// Registers a subcommand at static-initialization time; returns true.
bool register_command(const Command& command);

// The arguments before the command: -h/--help, --version; `rest` is the command and everything
// after it, unparsed. `error` is set for anything else before the command (an unknown option).
struct RootLine {
  bool help = false;
  bool version = false;
  std::vector<std::string> rest;
  std::string error;
};
RootLine parse_root(const std::vector<std::string>& argv);

// " (did you mean X?)" for the closest of `names` at most two edits from `word`; "" when none is.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& names);

}  // namespace mlakit::cli

#define MLAKIT_CLI_COMMAND(ident, ...) \
  static const bool mlakit_cli_registered_##ident = ::mlakit::cli::register_command({__VA_ARGS__})
