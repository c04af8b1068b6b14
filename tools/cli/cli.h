// The mlakit CLI: subcommands register themselves (one file each); a tiny argument parser that
// turns every mistake into a message naming the argument and exit code 2.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace mlakit::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;  // ran, but something failed (verification, device error)
constexpr int kExitUsage = 2;    // bad arguments

class Args {
 public:
  // `flags`: options without a value; every other --name takes one value.
  Args(std::vector<std::string> argv, std::set<std::string> flags);

  const std::vector<std::string>& positional() const { return positional_; }
  bool has(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  // Integer option within [lo, hi]; records an error naming the option otherwise.
  long long get_int(const std::string& name, long long fallback, long long lo, long long hi);
  double get_double(const std::string& name, double fallback);
  // Any --option not in `known` becomes an error; call after reading everything.
  void reject_unknown(const std::set<std::string>& known);
  void error(const std::string& message) { errors_.push_back(message); }
  bool ok() const { return errors_.empty(); }
  // Prints the errors and the usage line to stderr; returns kExitUsage.
  int fail_usage(const std::string& usage) const;
  bool help() const { return help_; }

 private:
  std::vector<std::string> positional_;
  std::map<std::string, std::string> options_;
  std::vector<std::string> errors_;
  bool help_ = false;
};

struct Command {
  const char* name;
  const char* summary;  // one line for `mlakit --help`
  const char* usage;    // full text for `mlakit NAME --help`
  int (*run)(Args& args);
  std::set<std::string> flags;  // options without a value
};

// Registers a subcommand at static-initialization time; returns true.
bool register_command(const Command& command);

}  // namespace mlakit::cli

#define MLAKIT_CLI_COMMAND(ident, ...) \
  static const bool mlakit_cli_registered_##ident = ::mlakit::cli::register_command({__VA_ARGS__})
