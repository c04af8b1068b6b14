// Profiling modes: NVTX annotation and re-execution under Nsight Compute.
#include "workbench/profiling.h"

#include <glob.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <nvtx3/nvToolsExt.h>

#include "base/run_info.h"

extern char** environ;

namespace mlakit {
namespace {

std::atomic<bool> g_nvtx_enabled{false};

bool is_executable(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Status parse_prof_mode(const std::string& text, ProfMode* out) {
  if (text == "disabled") *out = ProfMode::kDisabled;
  else if (text == "annotation") *out = ProfMode::kAnnotation;
  else if (text == "ncu") *out = ProfMode::kNcu;
  else if (text == "ncu-stalls") *out = ProfMode::kNcuStalls;
  else
    return Status::invalid_argument("--prof: expected disabled, annotation, ncu or ncu-stalls, got '" + text + "'");
  return Status::ok();
}

bool runs_under_ncu(ProfMode mode) { return mode == ProfMode::kNcu || mode == ProfMode::kNcuStalls; }

std::vector<std::string> ncu_mode_args(ProfMode mode) {
  if (mode == ProfMode::kNcuStalls) return {"--section", "SourceCounters", "--section", "WarpStateStats"};
  return {};
}

const char* prof_mode_name(ProfMode mode) {
  switch (mode) {
    case ProfMode::kDisabled: return "disabled";
    case ProfMode::kAnnotation: return "annotation";
    case ProfMode::kNcu: return "ncu";
    case ProfMode::kNcuStalls: return "ncu-stalls";
  }
  return "disabled";
}

void set_nvtx_enabled(bool enabled) { g_nvtx_enabled.store(enabled, std::memory_order_relaxed); }
bool nvtx_enabled() { return g_nvtx_enabled.load(std::memory_order_relaxed); }

ScopedNvtxRange::ScopedNvtxRange(const std::string& name) {
  if (!nvtx_enabled()) return;
  nvtxRangePushA(name.c_str());
  active_ = true;
}

ScopedNvtxRange::~ScopedNvtxRange() {
  if (active_) nvtxRangePop();
}

Status find_ncu(std::string* path) {
  std::vector<std::string> searched;
  if (const char* env_path = std::getenv("PATH")) {
    std::string p = env_path;
    size_t start = 0;
    while (start <= p.size()) {
      const size_t end = std::min(p.find(':', start), p.size());
      const std::string dir = p.substr(start, end - start);
      if (!dir.empty() && is_executable(dir + "/ncu")) {
        *path = dir + "/ncu";
        return Status::ok();
      }
      start = end + 1;
    }
    searched.push_back("$PATH");
  }
  const std::string toolkit = "/usr/local/cuda/bin/ncu";
  if (is_executable(toolkit)) {
    *path = toolkit;
    return Status::ok();
  }
  searched.push_back(toolkit);
  const std::string pattern = "/opt/nvidia/nsight-compute/*/ncu";
  glob_t g{};
  std::vector<std::string> found;
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      if (is_executable(g.gl_pathv[i])) found.push_back(g.gl_pathv[i]);
  globfree(&g);
  if (!found.empty()) {
    std::sort(found.begin(), found.end());  // version folders: the last is the newest
    *path = found.back();
    return Status::ok();
  }
  searched.push_back(pattern);
  std::string where;
  for (const auto& s : searched) where += (where.empty() ? "" : ", ") + s;
  return Status::not_found("Nsight Compute (ncu) not found (searched " + where +
                           "); install Nsight Compute or put ncu on PATH");
}

std::vector<std::string> strip_prof_args(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0 && argv[i] == "--prof") {
      ++i;  // and its value
      continue;
    }
    if (i > 0 && argv[i].rfind("--prof=", 0) == 0) continue;
    out.push_back(argv[i]);
  }
  return out;
}

std::vector<std::string> ncu_command_line(const std::string& ncu_path,
                                          const std::vector<std::string>& argv,
                                          const NcuOptions& options) {
  std::vector<std::string> cmd = {ncu_path,
                                  "--clock-control", "none",
                                  "--kernel-name", "regex:" + options.kernel_regex,
                                  "--launch-skip", std::to_string(options.launch_skip),
                                  "--launch-count", std::to_string(options.launch_count),
                                  "-f", "-o", options.report_path};
  cmd.insert(cmd.end(), options.extra_args.begin(), options.extra_args.end());
  const std::vector<std::string> app = strip_prof_args(argv);
  cmd.insert(cmd.end(), app.begin(), app.end());
  return cmd;
}

Status current_command_line(std::vector<std::string>* argv) {
  argv->clear();
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  if (!f) return Status::io_error("cannot read /proc/self/cmdline");
  const std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t start = 0;
  while (start < all.size()) {
    const size_t end = all.find('\0', start);
    argv->push_back(all.substr(start, (end == std::string::npos ? all.size() : end) - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (argv->empty()) return Status::io_error("/proc/self/cmdline is empty");
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) (*argv)[0] = exe.string();
  return Status::ok();
}

Status prepare_ncu_run(const std::vector<std::string>& argv, const NcuOptions& options, NcuRun* run) {
  std::string ncu;
  MLAKIT_RETURN_IF_ERROR(find_ncu(&ncu));
  NcuOptions opt = options;
  if (opt.report_path.empty()) {
    const std::string command = argv.size() > 1 ? argv[1] : "mlakit";
    opt.report_path = "out/prof/" + command + "-" + file_timestamp();
  }
  std::error_code ec;
  const std::filesystem::path parent = std::filesystem::path(opt.report_path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) return Status::io_error("cannot create report folder " + parent.string() + ": " + ec.message());
  run->command = ncu_command_line(ncu, argv, opt);
  run->report = ends_with(opt.report_path, ".ncu-rep") ? opt.report_path : opt.report_path + ".ncu-rep";
  return Status::ok();
}

Status execute_ncu_run(const NcuRun& run, int* exit_code) {
  std::vector<char*> argv;
  for (const auto& a : run.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The child knows it runs under ncu (the timer then falls back from CUPTI to events quietly).
  std::vector<std::string> env_store = {"MLAKIT_PROFILED_BY=ncu"};
  for (char** e = environ; e && *e; ++e)
    if (std::string(*e).rfind("MLAKIT_PROFILED_BY=", 0) != 0) env_store.push_back(*e);
  std::vector<char*> env;
  for (auto& e : env_store) env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid = 0;
  if (const int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), env.data()); rc != 0)
    return Status::io_error("cannot start " + run.command[0] + ": " + std::strerror(rc));
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0)
    if (errno != EINTR) return Status::io_error(std::string("waitpid: ") + std::strerror(errno));
  *exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
  return Status::ok();
}

}  // namespace mlakit
