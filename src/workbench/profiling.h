// Profiling modes of the run/bench commands (--prof disabled|annotation|ncu):
//   disabled    nothing extra
//   annotation  NVTX ranges around workloads, tilings and timed calls (for Nsight Systems, or
//               ncu's --nvtx filters); ScopedNvtxRange is a no-op in every other mode
//   ncu         the command runs itself again under Nsight Compute with --prof removed:
//               ncu --clock-control none --kernel-name regex:<filter> --launch-skip N
//                   --launch-count M -f -o <report> <the same command line>
//   ncu-stalls  as ncu, recording the sections of source-level warp-state sampling
//               (SourceCounters, WarpStateStats) for lab/scripts/ncu_stalls.py: stall samples per SASS
//               instruction and per stall reason
#pragma once

#include <string>
#include <vector>

#include "mlakit/status.h"

namespace mlakit {

enum class ProfMode { kDisabled, kAnnotation, kNcu, kNcuStalls };

// "disabled" | "annotation" | "ncu" | "ncu-stalls"; anything else is kInvalidArgument naming the
// choices.
Status parse_prof_mode(const std::string& text, ProfMode* out);
const char* prof_mode_name(ProfMode mode);
// Whether the mode runs the command again under ncu (ncu, ncu-stalls).
bool runs_under_ncu(ProfMode mode);
// The ncu options a mode adds to the command line (NcuOptions::extra_args): none for ncu; the
// SourceCounters and WarpStateStats sections for ncu-stalls.
std::vector<std::string> ncu_mode_args(ProfMode mode);

// Process-wide switch for ScopedNvtxRange (off by default; thread-safe).
void set_nvtx_enabled(bool enabled);
bool nvtx_enabled();

// Pushes an NVTX range on construction and pops it on destruction when annotation is enabled.
class ScopedNvtxRange {
 public:
  explicit ScopedNvtxRange(const std::string& name);
  ~ScopedNvtxRange();
  ScopedNvtxRange(const ScopedNvtxRange&) = delete;
  ScopedNvtxRange& operator=(const ScopedNvtxRange&) = delete;

 private:
  bool active_ = false;
};

struct NcuOptions {
  std::string kernel_regex = ".*";   // --kernel-name regex:<this>
  int launch_skip = 0;               // kernels matching the filter to skip first
  int launch_count = 1;              // kernels to profile after them
  std::string report_path;           // "" = out/prof/<command>-<YYYYmmdd-HHMMSS> (.ncu-rep added)
  std::vector<std::string> extra_args;  // passed to ncu before the command ("--set", "full")
};

// Finds ncu: $PATH, /usr/local/cuda/bin/ncu, /opt/nvidia/nsight-compute/*/ncu. kNotFound with a
// message naming the places searched when absent.
Status find_ncu(std::string* path);

// `argv` without "--prof ncu" / "--prof=ncu" (and without any other --prof value).
std::vector<std::string> strip_prof_args(const std::vector<std::string>& argv);

// The full ncu command line for `argv` (argv[0] = the program); pure, for tests and messages.
std::vector<std::string> ncu_command_line(const std::string& ncu_path,
                                          const std::vector<std::string>& argv,
                                          const NcuOptions& options);

// This process's command line (from /proc/self/cmdline; argv[0] replaced by /proc/self/exe so
// the re-executed program is this exact binary).
Status current_command_line(std::vector<std::string>* argv);

// One run of a command under ncu, ready to start.
struct NcuRun {
  std::vector<std::string> command;  // ncu, its options, then the command without --prof
  std::string report;                // the report ncu writes, ".ncu-rep" included
};

// Finds ncu, names the report (options.report_path, default out/prof/<command>-<timestamp>),
// creates its folder and builds the command line for `argv` (argv[0] = the program). kNotFound
// without ncu (naming where it looked), kIoError when the folder cannot be created.
Status prepare_ncu_run(const std::vector<std::string>& argv, const NcuOptions& options, NcuRun* run);

// Runs it as a child process (stdout and stderr inherited, MLAKIT_PROFILED_BY=ncu in its
// environment so the timer leaves CUPTI to ncu) and waits; `*exit_code` is ncu's. Never prints:
// the CLI says what ran and where the report went.
Status execute_ncu_run(const NcuRun& run, int* exit_code);

}  // namespace mlakit
