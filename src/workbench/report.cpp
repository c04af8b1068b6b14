// Benchmark records: JSON lines, CSV, the text table and the plot script runner.
#include "workbench/report.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <tuple>

#include "base/format.h"
#include "base/run_info.h"
#include "io/file.h"
#include "mlakit/version.h"

extern char** environ;

namespace mlakit {
namespace {

// Figures are written with a fixed number of decimals: the shortest round-trip form of
// 12.300000000000001 is noise in a report.
double round_to(double x, int decimals) {
  if (!std::isfinite(x)) return x;
  const double scale = std::pow(10.0, decimals);
  return std::round(x * scale) / scale;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

void apply_roofline(const Cost& cost, double ceiling_gbps, BenchRecord* r, double peak_tflops) {
  r->bytes = cost.gathered_bytes;
  r->flops = cost.flops;
  r->ceiling_gbps = ceiling_gbps > 0 ? ceiling_gbps : 0;
  r->peak_tflops = peak_tflops > 0 ? peak_tflops : 0;
  if (r->median_us > 0) {
    r->gbps = cost.gathered_bytes / (r->median_us * 1e3);
    r->tflops = cost.flops / (r->median_us * 1e6);
  } else {
    r->gbps = r->tflops = 0;
  }
  r->pct_of_ceiling = r->ceiling_gbps > 0 ? 100.0 * r->gbps / r->ceiling_gbps : 0;
  r->pct_of_peak = r->peak_tflops > 0 ? 100.0 * r->tflops / r->peak_tflops : 0;
}

BenchRecord make_bench_record(const BenchRun& run, const WorkloadInfo& w, const DeviceFacts& device,
                              const TimingResult& t, int iters, const VerifyResult* verify,
                              double ceiling_gbps, double peak_tflops) {
  BenchRecord r;
  r.git = git_revision();
  r.version = MLAKIT_VERSION_STRING;
  r.time = utc_timestamp();
  r.op = run.op;
  r.kernel_key = run.kernel_key;
  r.tiling = run.tiling;
  r.suite = run.suite;
  r.workload = w.name;
  r.shape = w.shape;
  r.num_tokens = w.num_tokens;
  r.device = device.name;
  r.sm_clock_mhz = t.sm_clock_mhz;
  r.throttle = t.throttle;
  r.method = t.method;
  r.iters = iters;
  r.median_us = t.median_us;
  r.p10_us = t.p10_us;
  r.p90_us = t.p90_us;
  r.mean_us = t.mean_us;
  r.host_us = t.host_us;
  if (verify) {
    const auto max_err = [&](const char* name) {
      const CompareReport* c = verify->find(name);
      return c ? c->max_abs_err : std::nan("");
    };
    r.verify_ran = true;
    r.verified = verify->ok();
    r.max_abs_err_output = max_err("output");
    r.max_abs_err_lse = max_err("lse");
  }
  apply_roofline(w.cost, ceiling_gbps, &r, peak_tflops);
  return r;
}

json::Value to_json(const BenchRecord& r) {
  using json::number;
  json::Value v = json::Value::object();
  v["git"] = r.git;
  v["version"] = r.version;
  v["time"] = r.time;
  v["op"] = r.op;
  v["kernel"] = r.kernel_key;
  v["tiling"] = r.tiling;
  v["suite"] = r.suite;
  v["workload"] = r.workload;
  v["shape"] = r.shape;
  v["T"] = r.num_tokens;
  v["device"] = r.device;
  v["sm_clock_mhz"] = r.sm_clock_mhz;
  v["throttle"] = r.throttle;
  v["method"] = r.method;
  v["iters"] = r.iters;
  v["median_us"] = number(round_to(r.median_us, 3));
  v["p10_us"] = number(round_to(r.p10_us, 3));
  v["p90_us"] = number(round_to(r.p90_us, 3));
  v["mean_us"] = number(round_to(r.mean_us, 3));
  v["host_us"] = number(round_to(r.host_us, 3));
  v["bytes"] = number(r.bytes);
  v["flops"] = number(r.flops);
  v["gbps"] = number(round_to(r.gbps, 1));
  v["tflops"] = number(round_to(r.tflops, 3));
  v["ceiling_gbps"] = number(round_to(r.ceiling_gbps, 1));
  v["pct_of_ceiling"] = number(round_to(r.pct_of_ceiling, 2));
  v["peak_tflops"] = number(round_to(r.peak_tflops, 1));
  v["pct_of_peak"] = number(round_to(r.pct_of_peak, 2));
  // Not verified: null; an error of an output the op does not have (NaN): null.
  v["verified"] = r.verify_ran ? json::Value(r.verified) : json::Value();
  v["max_abs_err_output"] = r.verify_ran ? number(r.max_abs_err_output) : json::Value();
  v["max_abs_err_lse"] = r.verify_ran ? number(r.max_abs_err_lse) : json::Value();
  v["floor"] = r.floor_us > 0 ? json::Value(r.floor_key) : json::Value();
  v["floor_us"] = r.floor_us > 0 ? number(round_to(r.floor_us, 3)) : json::Value();
  return v;
}

Status from_json(const json::Value& v, BenchRecord* r, const std::string& where) {
  *r = BenchRecord{};
  if (!v.is_object()) return Status::invalid_argument(where + ": expected an object, got " + json::describe(v));
  auto str = [&](const char* key, std::string* dst) { return json::get_optional_string(v, key, dst, where); };
  auto dbl = [&](const char* key, double* dst) { return json::get_optional_number(v, key, dst, where); };
  auto integer = [&](const char* key, int* dst) -> Status {
    int64_t x = *dst;
    MLAKIT_RETURN_IF_ERROR(json::get_optional_int(v, key, &x, where));
    *dst = int(x);
    return Status::ok();
  };
  for (Status st : {str("git", &r->git), str("version", &r->version), str("time", &r->time), str("op", &r->op),
                    str("kernel", &r->kernel_key),
                    str("tiling", &r->tiling), str("suite", &r->suite), str("workload", &r->workload),
                    str("shape", &r->shape), integer("T", &r->num_tokens), str("device", &r->device),
                    integer("sm_clock_mhz", &r->sm_clock_mhz), str("throttle", &r->throttle),
                    str("method", &r->method), integer("iters", &r->iters),
                    dbl("median_us", &r->median_us), dbl("p10_us", &r->p10_us),
                    dbl("p90_us", &r->p90_us), dbl("mean_us", &r->mean_us),
                    dbl("host_us", &r->host_us), dbl("bytes", &r->bytes), dbl("flops", &r->flops),
                    dbl("gbps", &r->gbps), dbl("tflops", &r->tflops),
                    dbl("ceiling_gbps", &r->ceiling_gbps), dbl("pct_of_ceiling", &r->pct_of_ceiling),
                    dbl("peak_tflops", &r->peak_tflops), dbl("pct_of_peak", &r->pct_of_peak),
                    dbl("max_abs_err_output", &r->max_abs_err_output),
                    dbl("max_abs_err_lse", &r->max_abs_err_lse), str("floor", &r->floor_key),
                    dbl("floor_us", &r->floor_us)})
    MLAKIT_RETURN_IF_ERROR(st);
  if (const json::Value* m = json::find(v, "verified"); m && !m->is_null()) {
    MLAKIT_RETURN_IF_ERROR(json::get_bool(v, "verified", &r->verified, where));
    r->verify_ran = true;
  }
  if (r->op.empty()) r->op = r->kernel_key.substr(0, r->kernel_key.find('.'));
  return Status::ok();
}

std::string csv_header() {
  return "git,time,kernel,tiling,suite,workload,shape,T,device,sm_clock_mhz,throttle,method,iters,"
         "median_us,p10_us,p90_us,mean_us,host_us,bytes,flops,gbps,tflops,ceiling_gbps,"
         "pct_of_ceiling,verified,max_abs_err_output,max_abs_err_lse,op,floor,floor_us";
}

std::string to_csv_row(const BenchRecord& r) {
  std::vector<std::string> f = {
      r.git, r.time, r.kernel_key, r.tiling, r.suite, r.workload, r.shape,
      std::to_string(r.num_tokens), r.device, std::to_string(r.sm_clock_mhz), r.throttle, r.method,
      std::to_string(r.iters), format_fixed(r.median_us, 3), format_fixed(r.p10_us, 3), format_fixed(r.p90_us, 3),
      format_fixed(r.mean_us, 3), format_fixed(r.host_us, 3), format_fixed(r.bytes, 0), format_fixed(r.flops, 0), format_fixed(r.gbps, 1),
      format_fixed(r.tflops, 3), format_fixed(r.ceiling_gbps, 1), format_fixed(r.pct_of_ceiling, 2),
      r.verify_ran ? (r.verified ? "true" : "false") : "",
      r.verify_ran ? format_sci(r.max_abs_err_output, 3) : "", r.verify_ran ? format_sci(r.max_abs_err_lse, 3) : "",
      r.op, r.floor_key, r.floor_us > 0 ? format_fixed(r.floor_us, 3) : ""};
  std::string row;
  for (size_t i = 0; i < f.size(); ++i) {
    if (i) row += ',';
    row += csv_field(f[i]);
  }
  return row;
}

namespace {

// The CSV's existing text, checked to carry this version's header ("" when new or empty).
Status existing_csv(const std::string& csv, std::string* text) {
  text->clear();
  if (!io::file_exists(csv)) return Status::ok();
  MLAKIT_RETURN_IF_ERROR(io::read_file(csv, text));
  const std::string first = text->substr(0, text->find('\n'));
  if (!text->empty() && first != csv_header())
    return Status::io_error(csv + " has other columns than this mlakit writes (an older "
                            "version?); move it away to start a new one");
  return Status::ok();
}

}  // namespace

Status check_bench_output(const std::string& out_dir) {
  if (io::file_exists(out_dir) && !io::is_directory(out_dir)) return Status::io_error("is a file, not a folder");
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Status::io_error("cannot create the folder: " + ec.message());
  if (access(out_dir.c_str(), W_OK) != 0) return Status::io_error(std::string("not writable: ") + std::strerror(errno));
  for (const char* name : {"bench.jsonl", "bench.csv"}) {
    const std::string f = io::join_path(out_dir, name);
    if (io::file_exists(f) && access(f.c_str(), W_OK) != 0)
      return Status::io_error(f + " is not writable: " + std::strerror(errno));
  }
  std::string csv;
  return existing_csv(io::join_path(out_dir, "bench.csv"), &csv);
}

Status append_bench_records(const std::string& out_dir, const std::vector<BenchRecord>& records) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Status::io_error("cannot create output folder " + out_dir + ": " + ec.message());
  const std::string jsonl = io::join_path(out_dir, "bench.jsonl");
  const std::string csv = io::join_path(out_dir, "bench.csv");
  std::string csv_text;
  MLAKIT_RETURN_IF_ERROR(existing_csv(csv, &csv_text));
  csv_text = csv_text.empty() ? csv_header() + "\n" : "";
  std::string lines;
  for (const BenchRecord& r : records) {
    lines += json::dump(to_json(r)) + "\n";
    csv_text += to_csv_row(r) + "\n";
  }
  MLAKIT_RETURN_IF_ERROR(io::append_file(jsonl, lines));
  return io::append_file(csv, csv_text);
}

Status read_bench_jsonl(const std::string& path, std::vector<BenchRecord>* records) {
  records->clear();
  std::vector<json::Value> values;
  MLAKIT_RETURN_IF_ERROR(json::parse_lines_file(path, &values));
  for (size_t i = 0; i < values.size(); ++i) {
    BenchRecord r;
    MLAKIT_RETURN_IF_ERROR(from_json(values[i], &r, path + ": record " + std::to_string(i + 1)));
    records->push_back(std::move(r));
  }
  return Status::ok();
}

std::vector<BenchRecord> latest_records(const std::vector<BenchRecord>& records) {
  using Key = std::tuple<std::string, std::string, std::string, std::string, std::string>;
  std::map<Key, size_t> slot;
  std::vector<BenchRecord> out;
  for (const BenchRecord& r : records) {
    const Key k{r.device, r.kernel_key, r.tiling, r.suite, r.workload};
    auto it = slot.find(k);
    if (it == slot.end()) {
      slot[k] = out.size();
      out.push_back(r);
    } else {
      out[it->second] = r;
    }
  }
  return out;
}

std::string format_bench_table(const std::vector<BenchRecord>& records) {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-14s %-30s %-12s %4s %9s %9s %9s %8s %6s %8s %6s %6s %-6s %-8s %s\n",
                "workload", "kernel", "tiling", "T", "span_us", "p90_us", "host_us", "GB/s", "%ceil",
                "TFLOP/s", "%peak", "MHz", "check", "git", "device");
  os << line;
  for (const BenchRecord& r : records) {
    const std::string check = r.verify_ran ? (r.verified ? "ok" : "FAIL") : "-";
    const std::string pct = r.ceiling_gbps > 0 ? format_fixed(r.pct_of_ceiling, 1) : "-";
    const std::string pct_peak = r.peak_tflops > 0 ? format_fixed(r.pct_of_peak, 1) : "-";
    const std::string mhz = r.sm_clock_mhz > 0 ? std::to_string(r.sm_clock_mhz) : "-";
    std::snprintf(line, sizeof line, "%-14s %-30s %-12s %4d %9.2f %9.2f %9.2f %8.0f %6s %8.1f %6s %6s %-6s %-8s %s%s\n",
                  r.workload.c_str(), r.kernel_key.c_str(), r.tiling.c_str(), r.num_tokens,
                  r.median_us, r.p90_us, r.host_us, r.gbps, pct.c_str(), r.tflops, pct_peak.c_str(),
                  mhz.c_str(), check.c_str(),
                  r.git.c_str(), r.device.c_str(),
                  r.throttle.empty() || r.throttle == "none" ? "" : (" [throttle: " + r.throttle + "]").c_str());
    os << line;
  }
  // Mean span per (kernel, tiling, suite): the contest's figure of merit for a suite.
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<double, int>> sums;
  for (const BenchRecord& r : records) {
    auto& s = sums[{r.kernel_key, r.tiling, r.suite}];
    s.first += r.median_us;
    s.second += 1;
  }
  for (const auto& [k, s] : sums) {
    const auto& [kernel, tiling, suite] = k;
    std::snprintf(line, sizeof line, "mean span %-30s %-12s %-14s %3d workloads: %.2f us\n",
                  kernel.c_str(), tiling.c_str(), suite.empty() ? "-" : suite.c_str(), s.second,
                  s.first / s.second);
    os << line;
  }
  return os.str();
}

Status find_plot_script(std::string* path) {
  std::vector<std::string> candidates;
  if (const char* src = std::getenv("MLAKIT_SOURCE_DIR"); src && *src)
    candidates.push_back(std::string(src) + "/scripts/plot_report.py");
  if (std::string d = executable_dir(); !d.empty()) {
    candidates.push_back(d + "/../scripts/plot_report.py");
    candidates.push_back(d + "/../../scripts/plot_report.py");
  }
  candidates.push_back("scripts/plot_report.py");
  for (const std::string& c : candidates)
    if (io::file_exists(c)) {
      *path = std::filesystem::path(c).lexically_normal().string();
      return Status::ok();
    }
  std::string where;
  for (const std::string& c : candidates) where += (where.empty() ? "" : ", ") + c;
  return Status::not_found("scripts/plot_report.py not found (looked at " + where +
                           "); set MLAKIT_SOURCE_DIR to the mlakit source folder");
}

Status check_png_path(const std::string& png_path) {
  const std::filesystem::path p(png_path);
  std::string ext = p.extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (ext != ".png") return Status::invalid_argument("expected a file name ending in .png");
  const std::string folder = p.parent_path().empty() ? "." : p.parent_path().string();
  if (!io::is_directory(folder)) return Status::invalid_argument("no folder " + folder + " to write it in");
  if (io::is_directory(png_path)) return Status::invalid_argument("is a folder");
  return Status::ok();
}

namespace {

// Runs argv (argv[0] looked up on PATH) with stdout and stderr into one pipe; `*output` gets what
// it wrote, `*code` its exit code (127 when it could not be started).
Status run_captured(std::vector<std::string> args, std::string* output, int* code) {
  int fds[2];
  if (pipe(fds) != 0) return Status::io_error(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    *code = 127;
    return Status::ok();
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) output->append(buf, size_t(n));
  close(fds[0]);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0)
    if (errno != EINTR) return Status::io_error(std::string("waitpid: ") + std::strerror(errno));
  *code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  return Status::ok();
}

// The last non-blank line of a script's output, without the script's own "name: " prefix: the
// reason, never a whole traceback.
std::string last_line(const std::string& output, const std::string& prefix) {
  std::string line;
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);)
    if (l.find_first_not_of(" \t\r") != std::string::npos) line = l;
  if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
  return line.empty() ? "no message" : line;
}

}  // namespace

Status render_report_png(const std::string& jsonl_path, const std::string& png_path) {
  std::string script;
  MLAKIT_RETURN_IF_ERROR(find_plot_script(&script));
  std::string output;
  int code = 0;
  MLAKIT_RETURN_IF_ERROR(run_captured({"python3", script, "--in", jsonl_path, "--png", png_path}, &output, &code));
  if (code == 0) return Status::ok();
  if (code == 127) return Status::not_found("python3 not found on PATH: the picture needs python3 with matplotlib");
  // plot_report.py exits 3 when matplotlib cannot be imported.
  if (code == 3)
    return Status::not_found("matplotlib is not installed for python3 (pip install 'mlakit[plot]', which "
                             "brings matplotlib); the table above has the same numbers");
  return Status::io_error(script + " failed (exit code " + std::to_string(code) + "): " +
                          last_line(output, "plot_report.py: "));
}

}  // namespace mlakit
