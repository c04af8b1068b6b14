#include "base/run_info.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <vector>

namespace mlakit {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `command` through the shell; its stdout, trailing newline removed; "" on failure.
std::string capture(const std::string& command, int* exit_code) {
  *exit_code = -1;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int rc = pclose(p);
  *exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string format_now(const char* format, bool utc) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (utc) gmtime_r(&now, &tm);
  else localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

}  // namespace

std::string user_cache_dir() {
  if (std::string d = env_or_empty("MLAKIT_CACHE_DIR"); !d.empty()) return d;
  if (std::string x = env_or_empty("XDG_CACHE_HOME"); !x.empty()) return x + "/mlakit";
  std::string home = env_or_empty("HOME");
  if (home.empty()) home = "/tmp";
  return home + "/.cache/mlakit";
}

std::string git_revision() {
  static std::once_flag once;
  static std::string revision = "unknown";
  std::call_once(once, [] {
    std::vector<std::string> dirs;
    if (std::string d = executable_dir(); !d.empty()) dirs.push_back(d);
    dirs.push_back(".");
    for (const std::string& d : dirs) {
      int rc = 0;
      const std::string git = "git -C " + shell_quote(d) + " ";
      const std::string rev = capture(git + "rev-parse --short HEAD 2>/dev/null", &rc);
      if (rc != 0 || rev.empty()) continue;
      const std::string changes =
          capture(git + "status --porcelain --untracked-files=no 2>/dev/null", &rc);
      revision = rev + (rc == 0 && !changes.empty() ? "+dirty" : "");
      return;
    }
  });
  return revision;
}

std::string utc_timestamp() { return format_now("%Y-%m-%dT%H:%M:%SZ", true); }

std::string file_timestamp() { return format_now("%Y%m%d-%H%M%S", false); }

std::string executable_dir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace mlakit
