// The CLI's contract: bad arguments print what is wrong and exit 2; help everywhere; list and
// devices work without a GPU.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "mlakit/device.h"
#include "mlakit/version.h"
#include "temp_dir.h"
#include "runtime/registry.h"
#include "workbench/dsa/bench.h"
#include "workbench/host_budget.h"

extern char** environ;

namespace mlakit {
namespace {

struct Result {
  int code;
  std::string output;  // stdout + stderr
};

// Runs the CLI through the shell: `env` may set variables ("MLAKIT_HOST_MEMORY_LIMIT=16G") or
// limits ("ulimit -v 1000000;").
Result cli(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + " " + std::string(MLAKIT_CLI_PATH) + " " + args + " 2>&1";
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

// Starts the CLI with `args` and the file actions (stdout and stderr somewhere); -1 when it could
// not start.
pid_t spawn_cli(const std::vector<std::string>& args, const posix_spawn_file_actions_t* actions) {
  std::vector<std::string> owned = {MLAKIT_CLI_PATH};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  return posix_spawn(&pid, MLAKIT_CLI_PATH, actions, nullptr, argv.data(), environ) == 0 ? pid : -1;
}

// Starts the CLI, reads its output (stdout and stderr) until `needle` shows up, the output ends or
// `seconds` pass, then kills it: for long runs whose first lines are what a test checks.
std::string output_until(const std::vector<std::string>& args, const std::string& needle, int seconds) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  const pid_t pid = spawn_cli(args, &actions);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (pid > 0 && out.find(needle) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, size_t(n));
  }
  close(fds[0]);
  if (pid > 0) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  return out;
}

// Runs the CLI with a pseudo-terminal as its stdout and stderr (a terminal user's view) and
// returns everything it wrote.
std::string output_on_a_terminal(const std::vector<std::string>& args) {
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) return "no pseudo-terminal";
  const std::string slave = ptsname(master);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, slave.c_str(), O_RDWR | O_NOCTTY, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addclose(&actions, master);
  const pid_t pid = spawn_cli(args, &actions);
  posix_spawn_file_actions_destroy(&actions);
  std::string out;
  char buf[4096];
  ssize_t n;
  // The master reads EIO once the child (the last holder of the slave) has exited.
  while (pid > 0 && ((n = read(master, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
    if (n > 0) out.append(buf, size_t(n));
  if (pid > 0) waitpid(pid, nullptr, 0);
  close(master);
  return out;
}

void expect_usage_error(const std::string& args, const std::string& message) {
  const Result r = cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
  EXPECT_NE(r.output.find(message), std::string::npos) << args << "\n" << r.output;
}

TEST(Cli, NoCommandAndUnknownCommandExit2) {
  expect_usage_error("", "usage: mlakit <command>");
  expect_usage_error("frobnicate", "unknown command 'frobnicate'");
  const Result r = cli("frobnicate");
  EXPECT_EQ(r.output.find("did you mean"), std::string::npos) << r.output;  // nothing is close
}

// Issue 62: a mistyped command got no suggestion though options did.
TEST(Cli, AnUnknownCommandGetsASuggestion) {
  expect_usage_error("bnech", "unknown command 'bnech' (did you mean bench?)");
  expect_usage_error("verfy --suite dsa-edge", "unknown command 'verfy' (did you mean verify?)");
  expect_usage_error("hlep", "unknown command 'hlep' (did you mean help?)");
  expect_usage_error("--verion", "unknown option --verion (did you mean --version?)");
}

// Issue 62: `help run` printed the overview and `help nope` exited 0.
TEST(Cli, HelpOfACommandIsThatCommandsHelp) {
  for (const char* c : {"run", "bench", "verify", "tune", "list", "report"}) {
    const Result help = cli(std::string("help ") + c);
    const Result own = cli(std::string(c) + " --help");
    EXPECT_EQ(help.code, 0) << c << "\n" << help.output;
    EXPECT_EQ(help.output, own.output) << c;
    EXPECT_NE(help.output.find(std::string("usage: mlakit ") + c), std::string::npos) << help.output;
  }
  const Result overview = cli("help");
  EXPECT_EQ(overview.code, 0) << overview.output;
  EXPECT_NE(overview.output.find("commands:"), std::string::npos) << overview.output;
  expect_usage_error("help nope", "help: unknown command 'nope'");
  expect_usage_error("help bnech", "help: unknown command 'bnech' (did you mean bench?)");
  expect_usage_error("help run bench", "help takes one command name, got 2");
}

// Issue 62: `bench --suite dsa-contest --suite dsa-edge` ran dsa-edge with exit 0.
TEST(Cli, ARepeatedSingleValueOptionIsAnError) {
  expect_usage_error("bench --suite dsa-contest --suite dsa-edge",
                     "--suite given 2 times ('dsa-contest', 'dsa-edge'); give it once");
  expect_usage_error("run --t 2 --t=3", "--t given 2 times ('2', '3'); give it once");
  expect_usage_error("run --t 2 --kv fp8 --kv bf16", "--kv given 2 times");
  expect_usage_error("bench --suite dsa-edge --tiling s1n64x4m1p4 --tiling s2n64x4m1p4", "--tiling given 2 times");
  const Result once = cli("run --t 2 --explain");
  EXPECT_EQ(once.code, 0) << once.output;  // given once, it is no repeat
}

// Issue 62: the check of --valid against --topk said "valid: ...", not the option's name.
TEST(Cli, ValidIsNamedAsTheOption) {
  expect_usage_error("run --t 2 --topk 256 --valid 300 --no-time", "mlakit: --valid: expected at most topk = 256, got 300");
  const Result r = cli("run --t 2 --topk 256 --valid 300 --no-time");
  EXPECT_EQ(r.output.find("mlakit: valid:"), std::string::npos) << r.output;
}

// Issue 62: --explain printed nothing without a GPU. It plans every workload for a chip of the
// device table (h200 unless --device-preset names another) and runs nothing; a chip the kernel
// cannot run on, or a name not in the table, is a usage error that says why.
TEST(Cli, ExplainPlansForAPresetChipWithoutAGpu) {
  if (device_count() > 0) GTEST_SKIP() << "a CUDA device is visible: --explain alone plans for it and runs";
  Result r = cli("run --t 2 --explain");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("plans for sm_90 (NVIDIA H200"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no usable GPU here"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dsa_decode.v2_fused.bf16 s"), std::string::npos) << r.output;  // the plan's text
  EXPECT_NE(r.output.find("one launch, grid"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("CPU reference"), std::string::npos) << r.output;  // nothing runs
  r = cli("run mla_decode --b 2 --t 100 --explain");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("mla_decode.v1_paged.bf16 c"), std::string::npos) << r.output;
}

TEST(Cli, ExplainForANamedPreset) {
  Result r = cli("bench --suite dsa-edge --explain --device-preset h100");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("plans for sm_90 (NVIDIA H100"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("edge-empty-T1"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("no usable GPU"), std::string::npos) << r.output;  // the preset was asked for
  r = cli("verify --suite dsa-edge --explain --device-preset h200 --tiling s1n64x4m1p4");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("s1n64x4m1p4"), std::string::npos) << r.output;
  expect_usage_error("bench --suite dsa-edge --explain --device-preset b200",
                     "--explain: dsa_decode.v2_fused.bf16 cannot be planned for sm_100 (NVIDIA B200");
  expect_usage_error("run --t 2 --explain --device-preset nope", "--device-preset: device 'nope': not in the table");
  expect_usage_error("run --t 2 --device-preset h200", "--device-preset NAME only applies with --explain");
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

// The first "mlakit: ..." line of the output (the root cause).
std::string first_error(const std::string& output) {
  const size_t at = output.find("mlakit: ");
  return at == std::string::npos ? "" : output.substr(at, output.find('\n', at) - at);
}

// Exit 2, the first error line is `first`, and `absent` (what the old parser said or did) is
// nowhere in the output.
void expect_root_cause(const std::string& args, const std::string& first, const std::string& absent) {
  const Result r = cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.output;
  EXPECT_EQ(first_error(r.output), first) << args << "\n" << r.output;
  EXPECT_EQ(r.output.find(absent), std::string::npos) << args << "\n" << r.output;
}

// Issue 13: `--no-verify` took `--suite` as its value; verify now refuses the option it does not
// have, and nothing runs (the default suite used to run instead of dsa-edge).
TEST(Cli, AnUnknownOptionSwallowsNoArgument) {
  expect_root_cause("verify --no-verify --suite dsa-edge", "mlakit: unknown option --no-verify", "dsa-contest");
}

// Issue 13: `--chek` took `--t` as its value, and "kernel '4' is not registered" came first.
TEST(Cli, TheRootCauseComesFirstWithASuggestion) {
  expect_root_cause("run --chek --t 4", "mlakit: unknown option --chek (did you mean --check?)", "kernel '4'");
  expect_usage_error("run --t 4 --tt 2", "unknown option --tt (did you mean --t?)");
}

// Issue 13: an unknown option at the end was "an option that needs a value".
TEST(Cli, AnUnknownOptionIsCalledUnknown) {
  expect_root_cause("run --t 4 --bogus", "mlakit: unknown option --bogus", "needs a value");
}

// Issue 13: `--check=0` turned checking on, `--no-verify=false` turned verification off.
TEST(Cli, AFlagGivenAValueIsRefused) {
  expect_usage_error("run --t 1 --check=0", "--check takes no value, got '--check=0'");
  expect_usage_error("run --t 1 --check=true", "--check takes no value");
  expect_usage_error("bench --no-verify=false", "--no-verify takes no value, got '--no-verify=false'");
  expect_usage_error("tune --dry-run=1", "--dry-run takes no value");
}

// Issue 13: extra positionals were ignored.
TEST(Cli, ExtraPositionalsAreRefused) {
  for (const char* args : {"list extra", "devices extra", "report extra", "ceiling extra"})
    expect_usage_error(args, "unexpected argument 'extra'");
  for (const char* args : {"bench dsa_decode extra", "verify dsa_decode extra", "run dsa_decode extra --t 1",
                           "tune dsa_decode.v1_splitk.bf16 extra"})
    expect_usage_error(args, "unexpected argument 'extra' (at most one op or kernel key)");
  expect_usage_error("bench extra", "kernel 'extra' is not registered");  // the one positional: an op or a key
}

// Issue 13: `-t 4` was read as the kernel key "-t".
TEST(Cli, ASingleDashOptionIsNoKernelKey) {
  expect_root_cause("run -t 4", "mlakit: unknown option -t (did you mean --t?)", "not registered");
}

TEST(Cli, IntegersAreDecimal) {
  const Result r = cli("run --t 010 --topk 256 --num-pages 64 --no-time");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("shape T=10 "), std::string::npos) << r.output;  // not octal 8
  expect_usage_error("run --t 0x10", "--t: expected an integer, got '0x10'");
}

TEST(Cli, AnOptionIsNoValue) {
  expect_usage_error("run --tiling --check --t 1", "--tiling: needs a value, got the option '--check'");
  expect_usage_error("bench --iters --seed 3", "--iters: needs a value, got the option '--seed'");
  expect_usage_error("bench --suite", "option --suite needs a value");
}

// Issue 13: "--prof: --prof: expected ...".
TEST(Cli, ProfNamesItsOptionOnce) {
  expect_root_cause("run --prof foo --t 1", "mlakit: --prof: expected disabled, annotation, ncu or ncu-stalls, got 'foo'",
                    "--prof: --prof");
}

TEST(Cli, SuitesAndTracesAreCheckedFirst) {
  expect_usage_error("tune --suite nope",
                     "--suite nope: no such suite (known: dsa-contest dsa-serving dsa-edge (--heads 16|32|64|128, "
                     "--kv bf16|fp8); mla-serving mla-edge)");
  const Result r = cli("tune --suite nope --dry-run");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(r.output.find("tune dsa_decode"), std::string::npos) << r.output;  // no header before the error
  EXPECT_EQ(r.output.find("needs a GPU"), std::string::npos) << r.output;
  expect_usage_error("bench --suite dsa-edge --trace x", "--suite and --trace: give one of them");
  expect_usage_error("bench --definition d", "--definition NAME only applies with --trace DIR");
}

TEST(Cli, Version) {
  const Result r = cli("--version");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output, std::string("mlakit ") + MLAKIT_VERSION_STRING + "\n");
  expect_usage_error("--bogus", "unknown option --bogus");
}

// Issue 13: `run --t 1 --num-pages 1000000` died in std::bad_alloc (exit 134) and `run --t 1048576`
// grew past 8 GB; the host memory a shape needs is estimated before synthesis and refused past the
// limit, naming the option that sized it. The limit is set here so that machines with more memory
// refuse too.
TEST(Cli, AShapePastTheHostMemoryLimitIsAUsageError) {
  Result r = cli("run --t 1 --num-pages 1000000", "MLAKIT_HOST_MEMORY_LIMIT=16G");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(first_error(r.output).rfind("mlakit: --num-pages 1000000: the run needs about 68.7 GB of host memory "
                                        "(caches 68.7 GB", 0),
            0u)
      << r.output;
  EXPECT_NE(r.output.find("more than the limit of 16.0 GB (MLAKIT_HOST_MEMORY_LIMIT=16G)"), std::string::npos)
      << r.output;
  r = cli("run --t 1048576", "MLAKIT_HOST_MEMORY_LIMIT=16G");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(first_error(r.output).rfind("mlakit: --t 1048576: the run needs about 170.1 GB", 0), 0u) << r.output;
  // Without the variable the limit is the machine's memory (no machine here has 1.2 TB).
  r = cli("run --t 1 --num-pages 16777216");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--num-pages 16777216: the run needs about 1.1 TB of host memory"), std::string::npos)
      << r.output;
  r = cli("run --t 1", "MLAKIT_HOST_MEMORY_LIMIT=lots");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("MLAKIT_HOST_MEMORY_LIMIT: expected a size such as 16G, 512M or 17179869184, got 'lots'"),
            std::string::npos)
      << r.output;
}

// Issue 13: `run --t 3000` took a minute and 7.5 GB with no word. Runs whose host work is estimated
// past 10 s say so on stderr before it starts. The estimate scales with the hardware threads: where
// --t 3000 is quick, no warning is due and the test has nothing to check.
TEST(Cli, ALongRunIsAnnounced) {
  std::unique_ptr<BenchSuite> suite;
  const Status st = dsa_bench().make_shape({{"t", 3000}}, 1, &suite);
  if (st.code() == Code::kInvalidArgument) GTEST_SKIP() << "this machine has too little memory: " << st.message();
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const std::string expected = long_run_warning(suite->info(0).host, true, suite->title());
  if (expected.empty()) GTEST_SKIP() << "--t 3000 is estimated under 10 s with this machine's threads";
  const std::string out = output_until({"run", "--t", "3000", "--check"}, "warning", 60);
  EXPECT_NE(out.find("mlakit: warning: " + expected), std::string::npos) << out;
  EXPECT_NE(expected.find("the host work takes about"), std::string::npos) << expected;
}

// An allocation that fails anyway (here: an address-space limit the estimate does not know) ends in
// one message and exit 1, not std::terminate.
TEST(Cli, AnAllocationFailureIsCaught) {
  const Result r = cli("run --t 600 --no-time", "ulimit -v 1000000;");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("mlakit: out of host memory: an allocation failed"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << r.output;
}

// Issue 13: `bench --trace FILE` said "no such dataset folder" for a file that exists.
TEST(Cli, ATraceThatIsAFileIsNamedAsOne) {
  const test::TempDir dir;
  std::FILE* f = std::fopen(dir.file("trace.jsonl").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  expect_usage_error("bench --trace " + dir.file("trace.jsonl"),
                     "mlakit: --trace: " + dir.file("trace.jsonl") +
                         ": is a file, not a FlashInfer-Trace dataset folder (definitions/, workloads/, blob/)");
  expect_usage_error("bench --trace " + dir.file("none"), dir.file("none") + ": no such dataset folder");
}

// Issue 13: a bad --out was reported after the whole run, with exit 0.
TEST(Cli, ABadOutFolderIsRefusedBeforeAnyWork) {
  const test::TempDir dir;
  std::FILE* f = std::fopen(dir.file("file").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  Result r = cli("bench --suite dsa-contest --out " + dir.file("file"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(first_error(r.output), "mlakit: --out " + dir.file("file") + ": is a file, not a folder") << r.output;
  EXPECT_EQ(r.output.find("contest-00"), std::string::npos) << r.output;  // nothing ran
  r = cli("run --t 1 --out " + dir.file("file/sub"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(first_error(r.output).find("--out " + dir.file("file/sub") + ": cannot create the folder"),
            std::string::npos)
      << r.output;
  // A bench.csv of other columns would be refused at the end: now before the start.
  f = std::fopen(dir.file("bench.csv").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("git,time,kernel\n", f);
  std::fclose(f);
  expect_usage_error("run --t 1 --out " + dir.str(), "has other columns than this mlakit writes");
  EXPECT_EQ(cli("run --t 1 --no-time --out " + dir.file("file")).code, 0);  // --no-time writes no records
}

// Issue 13: progress on a terminal for long runs; quiet in pipes and logs, and with --quiet.
// A FlashInfer-Trace dataset of three small workloads (random top-k rows over 40 pages): a suite
// whose inputs take milliseconds where dsa-contest's 0.6 GB caches take ~18 s per run.
void write_small_trace(const test::TempDir& dir) {
  const std::string def = "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps64";
  ASSERT_EQ(std::system(("mkdir -p " + dir.file("definitions") + " " + dir.file("workloads")).c_str()), 0);
  std::FILE* f = std::fopen(dir.file("definitions/" + def + ".json").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fprintf(f,
               "{\"name\": \"%s\", \"op_type\": \"dsa_paged\", \"axes\": {\"num_tokens\": {\"type\": \"var\"}, "
               "\"num_pages\": {\"type\": \"var\"}, \"num_qo_heads\": {\"type\": \"const\", \"value\": 16}, "
               "\"head_dim_ckv\": {\"type\": \"const\", \"value\": 512}, \"head_dim_kpe\": {\"type\": \"const\", "
               "\"value\": 64}, \"page_size\": {\"type\": \"const\", \"value\": 64}, \"topk\": {\"type\": \"const\", "
               "\"value\": 2048}}, \"inputs\": {\"sparse_indices\": {\"shape\": [\"num_tokens\", \"topk\"], "
               "\"dtype\": \"int32\"}}}\n",
               def.c_str());
  std::fclose(f);
  f = std::fopen(dir.file("workloads/" + def + ".jsonl").c_str(), "w");
  ASSERT_NE(f, nullptr);
  for (int t = 1; t <= 3; ++t)
    std::fprintf(f,
                 "{\"definition\": \"%s\", \"workload\": {\"uuid\": \"w%d\", \"axes\": {\"num_tokens\": %d, "
                 "\"num_pages\": 40}, \"inputs\": {\"sparse_indices\": {\"type\": \"random\"}}}}\n",
                 def.c_str(), t, t);
  std::fclose(f);
}

TEST(Cli, ProgressOnlyOnATerminal) {
  const test::TempDir dir;
  write_small_trace(dir);
  const std::vector<std::string> bench = {"bench", "--trace", dir.str(), "--iters", "3", "--warmup", "1"};
  std::string out = output_on_a_terminal(bench);
  EXPECT_NE(out.find("\r[1/3] trace-00: "), std::string::npos) << out;
  EXPECT_NE(out.find("\r[3/3] trace-02: "), std::string::npos) << out;
  EXPECT_NE(out.find("trace-02"), std::string::npos) << out;
  std::vector<std::string> quiet = bench;
  quiet.push_back("--quiet");
  out = output_on_a_terminal(quiet);
  EXPECT_EQ(out.find("[1/3]"), std::string::npos) << out;
  EXPECT_NE(out.find("trace-02"), std::string::npos) << out;  // the table is all there
  const Result piped = cli("bench --trace " + dir.str() + " --iters 3 --warmup 1");
  EXPECT_EQ(piped.code, 0) << piped.output;
  EXPECT_NE(piped.output.find("trace-02"), std::string::npos) << piped.output;
  EXPECT_EQ(piped.output.find('\r'), std::string::npos) << piped.output;
  EXPECT_EQ(piped.output.find("[1/3]"), std::string::npos) << piped.output;
  expect_usage_error("tune --quiet=1", "--quiet takes no value");
  EXPECT_EQ(cli("tune --dry-run --quiet").code, 0);
}

TEST(Cli, ListShowsEveryKernelWithItsArch) {
  const Result r = cli("list");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("dsa_decode.v1_splitk.bf16"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sm_90a"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the default for bf16 with 16, 32, 64, 128 heads"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dsa_decode.v1_splitk.bf16    dsa_decode  v1_splitk    bf16   16              sm_90a"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("dsa_decode  dsa-contest dsa-serving dsa-edge (--heads 16|32|64|128, --kv bf16|fp8)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("mla_decode  mla-serving mla-edge"), std::string::npos) << r.output;
}

// mla_decode's shape options: integers in their ranges, flags without values, none of another op's.
TEST(Cli, MlaDecodeShapeOptionsNameTheArgument) {
  expect_usage_error("run mla_decode --t 4096", "--b N (requests (batch)) is required");
  expect_usage_error("run mla_decode --b 32", "--t N (context length: cache_seqlens of every request) is required");
  expect_usage_error("run mla_decode --b 0 --t 1", "--b: expected a value in [1, 65536], got 0");
  expect_usage_error("run mla_decode --b 1 --t 1 --s 5", "--s: expected a value in [1, 4], got 5");
  expect_usage_error("run mla_decode --b 1 --t -1", "--t: expected a value in [0, 2147483647], got -1");
  expect_usage_error("run mla_decode --b 1 --t 1 --heads 12", "--heads: expected one of 16, 32, 64, 128, got 12");
  expect_usage_error("run mla_decode --b 1 --t 1 --page-size 2048", "--page-size: expected a value in [1, 1024]");
  expect_usage_error("run mla_decode --b 1 --t 1 --causal=1", "--causal takes no value, got '--causal=1'");
  expect_usage_error("run mla_decode --b 1 --t 1 --topk 5", "--topk is not a shape option of mla_decode");
  expect_usage_error("run --t 1 --causal", "--causal is not a shape option of dsa_decode");
  expect_usage_error("run --t 1 --b 2", "--b is not a shape option of dsa_decode");
  expect_usage_error("run mla_decode --b 1 --t 1 --casual", "unknown option --casual (did you mean --causal?)");
  expect_usage_error("verify mla_decode --suite dsa-edge", "suite 'dsa-edge' is a dsa_decode suite, not mla_decode");
  const Result r = cli("run mla_decode --b 65536 --t 1048576", "MLAKIT_HOST_MEMORY_LIMIT=16G");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_EQ(first_error(r.output).rfind("mlakit: --b 65536 --t 1048576: the run needs about 72", 0), 0u) << r.output;
}

// --kv picks the cache format: one shape's on run, a suite's on verify, bench and tune; every
// mistake names --kv and exits 2 before anything runs.
TEST(Cli, KvNamesItselfInEveryMistake) {
  expect_usage_error("run --t 1 --kv FP8", "--kv: expected one of bf16, fp8, got 'FP8'");
  expect_usage_error("run --t 1 --kv", "option --kv needs a value");
  expect_usage_error("tune --kv fp16", "--kv: expected one of bf16, fp8, got 'fp16'");
  expect_usage_error("bench --kv --suite dsa-edge", "--kv: needs a value, got the option '--suite'");
  expect_usage_error("run mla_decode --b 1 --t 1 --kv fp8", "--kv is not a shape option of mla_decode");
  expect_usage_error("verify mla_decode --kv fp8", "--kv: not an option of mla_decode suites (ops whose suites take --kv: dsa_decode)");
  expect_usage_error("bench --suite mla-edge --kv bf16", "--kv: not an option of mla_decode");
  expect_usage_error("tune mla_decode.v1_paged.bf16 --suite mla-serving --kv fp8 --dry-run",
                     "--kv: not an option of mla_decode");
  expect_usage_error("verify --kv bf16 --suite dsa-contest-fp8",
                     "--suite dsa-contest-fp8: no such suite (known: dsa-contest dsa-serving dsa-edge (--heads "
                     "16|32|64|128, --kv bf16|fp8); mla-serving mla-edge); a suite's flavours are options: --suite "
                     "dsa-contest --heads ... --kv ...");
  expect_usage_error("bench --kv fp8 --trace somewhere",
                     "--kv fp8: a trace's workloads keep the format they are read in; give --suite");
  // A bf16 kernel and the FP8 cache: one error before any work, not one per workload.
  expect_usage_error("verify dsa_decode.v2_fused.bf16 --kv fp8",
                     "dsa_decode.v2_fused.bf16 runs bf16 caches with 16, 32, 64, 128 heads; no workload of suite "
                     "dsa-contest --kv fp8 does (contest-00: ");
  expect_usage_error("run dsa_decode.v1_splitk.bf16 --t 1 --kv fp8", "runs bf16 caches with 16 heads");
}

// --heads: one shape's head count on run; on verify, bench and tune every workload of the suite
// with that many heads, with --kv or without. Mistakes name --heads.
TEST(Cli, HeadsPicksTheHeadCountOfAShapeAndTheFlavourOfASuite) {
  expect_usage_error("run --t 1 --heads 12", "--heads: expected one of 16, 32, 64, 128, got 12");
  expect_usage_error("verify --heads 12 --suite dsa-edge", "--heads: dsa_decode suites come in 16|32|64|128, got 12");
  expect_usage_error("bench --heads two", "--heads: expected a whole number, got 'two'");
  expect_usage_error("verify --heads 32 --suite dsa-edge-h64",
                     "a suite's flavours are options: --suite dsa-edge --heads ... --kv ...");
  expect_usage_error("bench --suite mla-edge --heads 32",
                     "--heads: not an option of mla_decode suites (ops whose suites take --heads: dsa_decode)");
  expect_usage_error("bench --heads 64 --trace somewhere", "--heads 64: a trace's workloads keep the format");
  const std::string edge_t1 = "(T=1 H=64 ckv=512 kpe=64 pages=1024 ps=64 topk=2048";
  for (const char* args : {"verify --heads 64 --suite dsa-edge", "verify --suite dsa-edge --heads 64",
                           "bench --heads=64 --kv fp8 --suite dsa-edge", "verify --kv fp8 --heads 64 --suite dsa-edge"}) {
    const Result r = cli(args, "MLAKIT_HOST_MEMORY_LIMIT=1M");
    EXPECT_NE(r.output.find(edge_t1), std::string::npos) << args << "\n" << r.output;
    EXPECT_EQ(std::string(args).find("fp8") != std::string::npos, r.output.find(" kv=fp8") != std::string::npos)
        << args << "\n" << r.output;
  }
  // One shape at 128 heads: verified where a GPU is, else the reference.
  const Result r = cli("run --t 2 --topk 256 --num-pages 64 --heads 128 --check --no-time");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("shape T=2 H=128 ckv=512 kpe=64 pages=64 ps=64 topk=256"), std::string::npos) << r.output;
  const Result t = cli("tune --heads 32 --dry-run --quiet");
  EXPECT_NE(t.output.find("suite dsa-contest --heads 32,"), std::string::npos) << t.output;
  EXPECT_EQ(t.code, 0) << t.output;
}

TEST(Cli, KvPicksTheFormatOfAShapeAndTheFlavourOfASuite) {
  // A suite on the FP8 cache, the default suite too. A tiny host-memory limit stops each run before
  // any work, naming the first workload and its shape (or, on a GPU machine without an fp8
  // kernel, the missing kernel and the shape).
  const std::string edge_t1 = "(T=1 H=16 ckv=512 kpe=64 pages=1024 ps=64 topk=2048";
  for (const char* args : {"verify --kv fp8 --suite dsa-edge", "verify --suite dsa-edge --kv fp8",
                           "bench --kv=fp8 --suite dsa-edge", "verify --kv fp8"}) {
    const Result r = cli(args, "MLAKIT_HOST_MEMORY_LIMIT=1M");
    const std::string first = std::string(args).find("edge") != std::string::npos ? edge_t1 : "(T=1 H=16";
    EXPECT_NE(r.output.find(first), std::string::npos) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(" kv=fp8"), std::string::npos) << args << "\n" << r.output;
  }
  const Result bf16 = cli("verify --kv bf16 --suite dsa-edge", "MLAKIT_HOST_MEMORY_LIMIT=1M");
  EXPECT_NE(bf16.output.find(edge_t1 + ")"), std::string::npos) << bf16.output;
  EXPECT_EQ(bf16.output.find("kv=fp8"), std::string::npos) << bf16.output;
  // One shape: verified where an fp8 kernel and a GPU are, else the reference or the missing kernel.
  const Result r = cli("run --t 2 --topk 256 --num-pages 64 --kv fp8 --check --no-time");
  EXPECT_NE(r.output.find("shape T=2 H=16 ckv=512 kpe=64 pages=64 ps=64 topk=256 kv=fp8"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.code, 0) << r.output;
  if (r.output.find("GPU kernels skipped") != std::string::npos)
    EXPECT_NE(r.output.find("CPU reference"), std::string::npos) << r.output;
  else
    EXPECT_NE(r.output.find(" ok"), std::string::npos) << r.output;
  // tune: the suite's first workload on the FP8 cache picks the kernel.
  const Result t = cli("tune --kv fp8 --dry-run --quiet");
  EXPECT_NE(t.output.find("tune dsa_decode.v2_fp8.fp8 "), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("suite dsa-contest --kv fp8,"), std::string::npos) << t.output;
  EXPECT_EQ(t.code, 0) << t.output;
}

// Until an mla_decode kernel registers, the commands say so; without a GPU they show the reference.
TEST(Cli, MlaDecodeRunsItsReferenceOrSaysWhichKernelIsMissing) {
  for (const char* args : {"run mla_decode --b 2 --t 100 --s 2 --causal --check --no-time",
                           "run mla_decode --b 3 --t 70 --page-size 16 --separate --mixed --heads 32 --check --no-time"}) {
    const Result r = cli(args);
    const bool no_kernel = kernel_keys("mla_decode").empty();
    const bool gpu = r.output.find("GPU kernels skipped") == std::string::npos;
    if (no_kernel && gpu) {
      EXPECT_EQ(r.code, 1) << args << "\n" << r.output;
      EXPECT_NE(r.output.find("registered mla_decode kernels: none"), std::string::npos) << r.output;
    } else if (!gpu) {
      EXPECT_EQ(r.code, 0) << args << "\n" << r.output;
      EXPECT_NE(r.output.find("CPU reference"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("empty_queries"), std::string::npos) << r.output;
    } else {
      EXPECT_EQ(r.code, 0) << args << "\n" << r.output;
      EXPECT_NE(r.output.find(" ok"), std::string::npos) << r.output;
    }
  }
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

TEST(Cli, MixedRowsAreADsaShapeFlag) {
  // One long row among shorter ones: row t holds valid >> (t % 6) slots (T = 3: 40 + 20 + 10).
  const Result r = cli("run --t 3 --topk 256 --num-pages 64 --valid 40 --mixed --check --no-time");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("synthetic-T3-ps64-topk256-v40-mixed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("   70 "), std::string::npos) << r.output;  // the slots column, with or without a GPU
  expect_usage_error("run --t 3 --mixed=2", "--mixed takes no value");
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
}  // namespace mlakit
