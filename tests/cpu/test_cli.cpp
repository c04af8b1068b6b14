// The CLI's contract: bad arguments print what is wrong and exit 2; help everywhere; list and
// devices work without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace {

struct Result {
  int code;
  std::string output;  // stdout + stderr
};

Result cli(const std::string& args) {
  const std::string cmd = std::string(MLAKIT_CLI_PATH) + " " + args + " 2>&1";
  Result r{-1, ""};
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void expect_usage_error(const std::string& args, const std::string& message) {
  const Result r = cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
}

TEST(Cli, NoCommandAndUnknownCommandExit2) {
  expect_usage_error("", "usage: mlakit <command>");
  expect_usage_error("frobnicate", "unknown command 'frobnicate'");
}

TEST(Cli, HelpEverywhere) {
  for (const char* c : {"--help", "list --help", "devices --help", "run --help", "bench --help", "verify --help",
                        "tune --help", "ceiling --help", "report --help"}) {
    const Result r = cli(c);
    EXPECT_EQ(r.code, 0) << c << "\n" << r.output;
    EXPECT_NE(r.output.find("usage"), std::string::npos) << c << "\n" << r.output;
  }
}

TEST(Cli, BadArgumentsNameTheArgument) {
  expect_usage_error("run", "--t N (number of tokens) is required");
  expect_usage_error("run --t 0", "--t: expected a value in [1,");
  expect_usage_error("run --t abc", "--t: expected an integer, got 'abc'");
  expect_usage_error("run --t 1 --bogus 3", "unknown option --bogus");
  expect_usage_error("run no.such.kernel --t 1", "kernel 'no.such.kernel' is not registered");
  expect_usage_error("run --t 1 --tiling q7", "tiling: expected the form");
  expect_usage_error("bench --suite no-such-suite", "no-such-suite");
  expect_usage_error("bench --iters", "option --iters needs a value");
  expect_usage_error("verify --seeds 0", "--seeds: expected a value in [1, 100]");
}

TEST(Cli, ListShowsEveryKernelWithItsArch) {
  const Result r = cli("list");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("dsa_decode.v1_splitk.bf16"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sm_90a"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the default for bf16 with 16 heads"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dsa_decode  dsa-contest dsa-serving dsa-edge"), std::string::npos) << r.output;
}

// Issue 8: this once timed a launch whose split (4096 slots) is twice the kernel's compaction.
// Every workload is planned before anything runs, with or without a GPU.
TEST(Cli, ATilingTheShapeCannotRunIsAUsageError) {
  for (const char* extra : {"", " --check", " --no-time"}) {
    const std::string args = std::string("run dsa_decode.v1_splitk.bf16 --t 1 --topk 4096 --tiling s1n64x2m4") + extra;
    expect_usage_error(args, "--tiling s1n64x2m4: tiling s1n64x2m4: a split of 4096 slots exceeds the 2048 "
                             "one CTA compacts; use num_splits >= 2");
  }
  expect_usage_error("verify dsa_decode.v1_splitk.bf16 --suite dsa-edge --tiling s1n64x4m4",
                     "stages must be 1, 2 or 3; got 4");
  // The default kernel (v2_fused) names its own rule.
  expect_usage_error("run --t 1 --tiling s1n64x2m4", "v2_fused merges in the kernel: m must be 1; got 4");
}

TEST(Cli, OpsAndKernelsNameTheOp) {
  // An op name or a kernel key as the positional, or a suite of the op: the same command.
  for (const char* args : {"run dsa_decode --t 2 --topk 256 --num-pages 64 --no-time",
                           "run dsa_decode.v1_splitk.bf16 --t 2 --topk 256 --num-pages 64 --no-time",
                           "run --kernel dsa_decode.v1_splitk.bf16 --t 2 --topk 256 --num-pages 64 --no-time"}) {
    const Result r = cli(args);
    EXPECT_EQ(r.code, 0) << args << "\n" << r.output;
  }
  expect_usage_error("run no_such_op --t 1", "kernel 'no_such_op' is not registered");
  expect_usage_error("run dsa_decode", "--t N (number of tokens) is required");
  expect_usage_error("verify dsa_decode --suite no-such-suite", "no-such-suite");
}

TEST(Cli, DevicesPrintsTheTable) {
  const Result r = cli("devices");
  EXPECT_EQ(r.code, 0) << r.output;
  for (const char* chip : {"H100", "H200", "B200", "B300", "RTX 5090"})
    EXPECT_NE(r.output.find(chip), std::string::npos) << chip << "\n" << r.output;
}

TEST(Cli, RunOneSmallShape) {
  // On a GPU machine this verifies and times the kernel; elsewhere it runs the CPU reference.
  const Result r = cli("run --t 2 --topk 256 --num-pages 64 --check --iters 3 --warmup 1");
  EXPECT_EQ(r.code, 0) << r.output;
  const bool gpu = r.output.find("GPU kernels skipped") == std::string::npos;
  if (gpu)
    EXPECT_NE(r.output.find(" ok"), std::string::npos) << r.output;
  else
    EXPECT_NE(r.output.find("CPU reference"), std::string::npos) << r.output;
}

}  // namespace
