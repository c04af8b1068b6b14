// mlakit: the workbench CLI. `mlakit --help` lists the subcommands; each has --help.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli.h"
#include "mlakit/version.h"

namespace mlakit::cli {
namespace {

std::vector<Command>& commands() {
  static std::vector<Command> table;
  return table;
}

void print_overview(FILE* to) {
  std::fprintf(to,
               "mlakit %s: MLA attention kernels for NVIDIA Hopper, and the workbench around them.\n\n"
               "usage: mlakit <command> [options]      mlakit <command> --help      mlakit --version\n\n"
               "commands:\n",
               MLAKIT_VERSION_STRING);
  auto sorted = commands();
  std::sort(sorted.begin(), sorted.end(),
            [](const Command& a, const Command& b) { return std::string(a.name) < b.name; });
  for (const Command& c : sorted) std::fprintf(to, "  %-10s %s\n", c.name, c.summary);
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "mlakit: %s\n\n", message.c_str());
  print_overview(stderr);
  return kExitUsage;
}

const Command* find_command(const std::string& name) {
  for (const Command& c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

std::string suggest_command(const std::string& name) {
  std::vector<std::string> names{"help"};
  for (const Command& c : commands()) names.push_back(c.name);
  return did_you_mean(name, names);
}

// `mlakit help` is the overview; `mlakit help CMD` is `mlakit CMD --help`.
int help(const std::vector<std::string>& rest) {
  if (rest.size() == 1) {
    print_overview(stdout);
    return kExitOk;
  }
  if (rest.size() > 2) return usage_error("help takes one command name, got " + std::to_string(rest.size() - 1));
  const Command* c = find_command(rest[1]);
  if (c == nullptr) {
    if (rest[1] == "help") {
      print_overview(stdout);
      return kExitOk;
    }
    return usage_error("help: unknown command '" + rest[1] + "'" + suggest_command(rest[1]));
  }
  Args args(c->name, {"--help"});
  return c->run(args);
}

// The arguments before the command: --help, --version; then the command and its arguments.
int dispatch(const std::vector<std::string>& argv) {
  const RootLine root = parse_root(argv);
  if (!root.error.empty()) return usage_error(root.error);
  const std::vector<std::string>& rest = root.rest;
  if (root.version) {
    std::printf("mlakit %s\n", MLAKIT_VERSION_STRING);
    return kExitOk;
  }
  if (root.help) {
    print_overview(stdout);
    return kExitOk;
  }
  if (rest.empty()) {
    print_overview(stderr);
    return kExitUsage;
  }
  if (rest[0] == "help") return help(rest);
  if (const Command* c = find_command(rest[0])) {
    Args args(c->name, std::vector<std::string>(rest.begin() + 1, rest.end()));
    return c->run(args);
  }
  return usage_error("unknown command '" + rest[0] + "'" + suggest_command(rest[0]));
}

}  // namespace

bool register_command(const Command& command) {
  commands().push_back(command);
  return true;
}

}  // namespace mlakit::cli

// Allocation failures end here, not in std::terminate: the host-memory estimate (docs/workbench.md)
// refuses the shapes it knows are too big, and this catches what it cannot foresee.
int main(int argc, char** argv) {
  try {
    return mlakit::cli::dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "mlakit: out of host memory: an allocation failed (std::bad_alloc). A smaller shape, or "
                 "MLAKIT_HOST_MEMORY_LIMIT set below what this machine can give, makes mlakit refuse such "
                 "runs before they start.\n");
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "mlakit: internal error: %s\n", e.what());
  }
  return mlakit::cli::kExitFailure;
}
