// mlakit: the workbench CLI. `mlakit --help` lists the subcommands; each has --help.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"

namespace mlakit::cli {
namespace {

std::vector<Command>& commands() {
  static std::vector<Command> table;
  return table;
}

void print_overview(FILE* to) {
  std::fprintf(to,
               "mlakit: MLA attention kernels for NVIDIA Hopper, and the workbench around them.\n\n"
               "usage: mlakit <command> [options]      mlakit <command> --help\n\ncommands:\n");
  auto sorted = commands();
  std::sort(sorted.begin(), sorted.end(),
            [](const Command& a, const Command& b) { return std::string(a.name) < b.name; });
  for (const Command& c : sorted) std::fprintf(to, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

bool register_command(const Command& command) {
  commands().push_back(command);
  return true;
}

}  // namespace mlakit::cli

int main(int argc, char** argv) {
  using namespace mlakit::cli;
  if (argc < 2) {
    print_overview(stderr);
    return kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_overview(stdout);
    return kExitOk;
  }
  for (const Command& c : commands()) {
    if (name != c.name) continue;
    Args args(std::vector<std::string>(argv + 2, argv + argc), c.flags);
    if (args.help()) {
      std::printf("%s\n", c.usage);
      return kExitOk;
    }
    return c.run(args);
  }
  std::fprintf(stderr, "mlakit: unknown command '%s'\n\n", name.c_str());
  print_overview(stderr);
  return kExitUsage;
}
