#include "workloads/dsa/trace.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <map>

#include "io/file.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "workloads/dsa/synth.h"

namespace mlakit {

using io::file_exists;
using io::HostTensor;
using io::is_directory;
using io::join_path;
using io::list_files;
using io::parent_path;
using io::read_file;
using io::read_safetensors;
using io::SafetensorsFile;
using io::tensor_as_int32;

namespace {

std::string stem_of(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

Status prefixed(const std::string& prefix, const Status& s) {
  if (s.is_ok()) return s;
  return Status(s.code(), prefix + ": " + s.message());
}

// The definition JSON named `name`: files named <name>.json first, then every other .json.
Status find_definition(const std::string& dir, const std::string& name, json::Value* def, std::string* path) {
  std::vector<std::string> files;
  const std::string defs = join_path(dir, "definitions");
  Status s = list_files(defs, ".json", &files);
  if (s.code() == Code::kNotFound)
    return Status::not_found(dir + ": no definitions/ folder; expected a FlashInfer-Trace dataset "
                             "(definitions/, workloads/, blob/)");
  MLAKIT_RETURN_IF_ERROR(s);
  std::stable_partition(files.begin(), files.end(), [&](const std::string& f) { return stem_of(f) == name; });
  std::vector<std::string> seen;
  for (const std::string& f : files) {
    json::Value v;
    MLAKIT_RETURN_IF_ERROR(json::parse_file(f, &v));
    const std::string n = json::string_or(v, "name");
    if (n == name) {
      *def = std::move(v);
      *path = f;
      return Status::ok();
    }
    if (!n.empty()) seen.push_back(n);
  }
  std::string list;
  for (const std::string& n : seen) list += (list.empty() ? "" : ", ") + n;
  return Status::not_found("no definition named \"" + name + "\" under " + defs +
                           (list.empty() ? std::string(" (none found)") : " (found: " + list + ")"));
}

// The constant value of a definition axis.
Status const_axis(const json::Value& def, const char* axis, int64_t* out) {
  const std::string where = "definition.axes." + std::string(axis);
  const json::Value* a = nullptr;
  MLAKIT_RETURN_IF_ERROR(json::get_member(json::member(def, "axes"), axis, &a, "definition.axes"));
  std::string type;
  MLAKIT_RETURN_IF_ERROR(json::get_string(*a, "type", &type, where));
  if (type != "const") return Status::unsupported(where + ": expected a \"const\" axis, got \"" + type + "\"");
  return json::get_int(*a, "value", out, where);
}

// A workload axis: the line's value, else the definition's constant.
Status workload_axis(const json::Value& axes, const json::Value& def, const char* axis, int64_t* out) {
  if (json::find(axes, axis)) return json::get_int(axes, axis, out, "workload.axes");
  if (json::string_or(json::member(json::member(def, "axes"), axis), "type") == "const")
    return const_axis(def, axis, out);
  return Status::invalid_argument("workload.axes: missing key \"" + std::string(axis) + "\"");
}

Status to_int(int64_t v, const char* what, int* out) {
  if (v < INT32_MIN || v > INT32_MAX)
    return Status::invalid_argument(std::string(what) + ": " + std::to_string(v) + " does not fit int32");
  *out = int(v);
  return Status::ok();
}

class TraceReader {
 public:
  TraceReader(std::string dir, const DsaTraceOptions& options) : dir_(std::move(dir)), options_(options) {}

  Status read(DsaSuite* out) {
    json::Value def;
    std::string def_path;
    MLAKIT_RETURN_IF_ERROR(find_definition(dir_, options_.definition, &def, &def_path));
    MLAKIT_RETURN_IF_ERROR(prefixed(def_path, read_definition(def)));
    def_ = &def;

    std::vector<std::string> files;
    MLAKIT_RETURN_IF_ERROR(workload_files(&files));
    out->name = "trace:" + options_.definition;
    out->workloads.clear();
    for (const std::string& f : files) MLAKIT_RETURN_IF_ERROR(read_jsonl(f, out));
    if (out->workloads.empty())
      return Status::not_found("no workloads of \"" + options_.definition + "\" under " +
                               join_path(dir_, "workloads"));
    const int width = out->workloads.size() > 100 ? 3 : 2;
    for (size_t i = 0; i < out->workloads.size(); ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "trace-%0*zu", width, i);
      out->workloads[i].name = name;
    }
    // Names change above, so "random" indices are synthesized only now (seeded by the name).
    for (size_t i = 0; i < out->workloads.size(); ++i)
      if (random_indices_[i]) MLAKIT_RETURN_IF_ERROR(synthesize_indices(&out->workloads[i]));
    out->description = "FlashInfer-Trace dataset " + dir_ + ": " + std::to_string(out->workloads.size()) +
                       " workloads of " + options_.definition;
    return Status::ok();
  }

 private:
  Status read_definition(const json::Value& def) {
    int64_t v = 0;
    MLAKIT_RETURN_IF_ERROR(const_axis(def, "num_qo_heads", &v));
    MLAKIT_RETURN_IF_ERROR(to_int(v, "num_qo_heads", &base_.num_heads));
    MLAKIT_RETURN_IF_ERROR(const_axis(def, "head_dim_ckv", &v));
    MLAKIT_RETURN_IF_ERROR(to_int(v, "head_dim_ckv", &base_.head_dim_ckv));
    MLAKIT_RETURN_IF_ERROR(const_axis(def, "head_dim_kpe", &v));
    MLAKIT_RETURN_IF_ERROR(to_int(v, "head_dim_kpe", &base_.head_dim_kpe));
    MLAKIT_RETURN_IF_ERROR(const_axis(def, "page_size", &v));
    MLAKIT_RETURN_IF_ERROR(to_int(v, "page_size", &base_.page_size));
    MLAKIT_RETURN_IF_ERROR(const_axis(def, "topk", &v));
    MLAKIT_RETURN_IF_ERROR(to_int(v, "topk", &base_.topk));
    const json::Value& si = json::member(json::member(def, "inputs"), "sparse_indices");
    if (!si.is_object()) return Status::invalid_argument("definition.inputs: missing \"sparse_indices\"");
    if (json::string_or(si, "dtype") != "int32")
      return Status::unsupported("definition.inputs.sparse_indices: expected dtype int32, got " +
                                 json::describe(json::member(si, "dtype")));
    return Status::ok();
  }

  // JSONL files named after the definition; when there are none, every JSONL file (lines of
  // other definitions are skipped).
  Status workload_files(std::vector<std::string>* files) {
    std::vector<std::string> all;
    Status s = list_files(join_path(dir_, "workloads"), ".jsonl", &all);
    if (s.code() == Code::kNotFound) return Status::not_found(dir_ + ": no workloads/ folder");
    MLAKIT_RETURN_IF_ERROR(s);
    files->clear();
    for (const std::string& f : all)
      if (stem_of(f) == options_.definition) files->push_back(f);
    if (files->empty()) *files = all;
    return Status::ok();
  }

  Status read_jsonl(const std::string& path, DsaSuite* out) {
    std::string text;
    MLAKIT_RETURN_IF_ERROR(read_file(path, &text));
    std::vector<json::Value> lines;
    std::vector<int> line_numbers;  // blank lines are skipped: the file's line of each value
    MLAKIT_RETURN_IF_ERROR(prefixed(path, json::parse_lines(text, &lines, &line_numbers)));
    for (size_t i = 0; i < lines.size(); ++i) {
      const json::Value& line = lines[i];
      const std::string where = path + ": line " + std::to_string(line_numbers[i]);
      if (json::find(line, "definition") && json::string_or(line, "definition") != options_.definition) continue;
      const json::Value* nested = json::find(line, "workload");
      const json::Value& w = nested ? *nested : line;
      DsaWorkload wl;
      bool random = false;
      MLAKIT_RETURN_IF_ERROR(prefixed(where, read_workload(w, path, &wl, &random)));
      out->workloads.push_back(std::move(wl));
      random_indices_.push_back(random);
    }
    return Status::ok();
  }

  Status read_workload(const json::Value& w, const std::string& jsonl_path, DsaWorkload* wl, bool* random) {
    if (!w.is_object()) return Status::invalid_argument("expected a workload object, got " + json::describe(w));
    wl->uuid = json::string_or(w, "uuid");
    const json::Value* axes = nullptr;
    MLAKIT_RETURN_IF_ERROR(json::get_member(w, "axes", &axes, "workload"));
    DsaProblem p = base_;
    int64_t v = 0;
    MLAKIT_RETURN_IF_ERROR(workload_axis(*axes, *def_, "num_tokens", &v));
    MLAKIT_RETURN_IF_ERROR(to_int(v, "workload.axes.num_tokens", &p.num_tokens));
    MLAKIT_RETURN_IF_ERROR(workload_axis(*axes, *def_, "num_pages", &v));
    MLAKIT_RETURN_IF_ERROR(to_int(v, "workload.axes.num_pages", &p.num_pages));
    MLAKIT_RETURN_IF_ERROR(p.validate());
    wl->problem = p;

    const json::Value* inputs = nullptr;
    MLAKIT_RETURN_IF_ERROR(json::get_member(w, "inputs", &inputs, "workload"));
    const json::Value& scale = json::member(*inputs, "sm_scale");
    if (json::string_or(scale, "type") == "scalar") {
      double s = 0;
      MLAKIT_RETURN_IF_ERROR(json::get_number(scale, "value", &s, "workload.inputs.sm_scale"));
      wl->sm_scale = float(s);
    }
    const json::Value* si = nullptr;
    MLAKIT_RETURN_IF_ERROR(json::get_member(*inputs, "sparse_indices", &si, "workload.inputs"));
    std::string type;
    MLAKIT_RETURN_IF_ERROR(json::get_string(*si, "type", &type, "workload.inputs.sparse_indices"));
    *random = type == "random";
    if (*random) return Status::ok();
    if (type != "safetensors")
      return Status::unsupported("workload.inputs.sparse_indices: type \"" + type +
                                 "\" is not supported (expected \"safetensors\" or \"random\")");
    std::string rel, key;
    MLAKIT_RETURN_IF_ERROR(json::get_string(*si, "path", &rel, "workload.inputs.sparse_indices"));
    MLAKIT_RETURN_IF_ERROR(json::get_string(*si, "tensor_key", &key, "workload.inputs.sparse_indices"));
    // Paths are relative to the dataset root; older datasets wrote them relative to the JSONL.
    std::string file = join_path(dir_, rel);
    if (!file_exists(file) && file_exists(join_path(parent_path(jsonl_path), rel)))
      file = join_path(parent_path(jsonl_path), rel);
    const SafetensorsFile* st = nullptr;
    MLAKIT_RETURN_IF_ERROR(load_cached(file, &st));
    std::vector<int64_t> shape;
    MLAKIT_RETURN_IF_ERROR(tensor_as_int32(*st, key, &wl->indices, &shape, file));
    if (shape.size() != 2 || shape[0] != p.num_tokens || shape[1] != p.topk)
      return Status::invalid_argument(file + ": tensor \"" + key + "\" has shape " +
                                      HostTensor{key, "I32", shape, {}}.shape_string() + ", expected [" +
                                      std::to_string(p.num_tokens) + ", " + std::to_string(p.topk) +
                                      "] (num_tokens, topk)");
    return Status::ok();
  }

  Status load_cached(const std::string& file, const SafetensorsFile** out) {
    auto it = files_.find(file);
    if (it == files_.end()) {
      SafetensorsFile st;
      MLAKIT_RETURN_IF_ERROR(read_safetensors(file, &st));
      it = files_.emplace(file, std::move(st)).first;
    }
    *out = &it->second;
    return Status::ok();
  }

  Status synthesize_indices(DsaWorkload* w) {
    const DsaProblem& p = w->problem;
    const int valid = int(std::min<int64_t>(p.topk, p.num_slots()));
    return synth::synthesize_rows(w, std::vector<int>(size_t(p.num_tokens), valid), synth::RowShape::kTopk,
                                  options_.seed);
  }

  std::string dir_;
  DsaTraceOptions options_;
  DsaProblem base_;
  const json::Value* def_ = nullptr;
  std::vector<bool> random_indices_;
  std::map<std::string, SafetensorsFile> files_;
};

}  // namespace

Status load_dsa_trace(const std::string& dataset_dir, const DsaTraceOptions& options, DsaSuite* out) {
  if (out == nullptr) return Status::invalid_argument("load_dsa_trace: out is null");
  if (file_exists(dataset_dir) && !is_directory(dataset_dir))
    return Status::invalid_argument(dataset_dir + ": is a file, not a FlashInfer-Trace dataset folder (definitions/, "
                                    "workloads/, blob/)");
  if (!is_directory(dataset_dir)) return Status::not_found(dataset_dir + ": no such dataset folder");
  DsaSuite suite;
  MLAKIT_RETURN_IF_ERROR(TraceReader(dataset_dir, options).read(&suite));
  *out = std::move(suite);
  return Status::ok();
}

Status list_dsa_trace_definitions(const std::string& dataset_dir, std::vector<std::string>* names) {
  if (names == nullptr) return Status::invalid_argument("list_dsa_trace_definitions: names is null");
  names->clear();
  std::vector<std::string> files;
  MLAKIT_RETURN_IF_ERROR(list_files(join_path(dataset_dir, "definitions"), ".json", &files));
  for (const std::string& f : files) {
    json::Value v;
    MLAKIT_RETURN_IF_ERROR(json::parse_file(f, &v));
    const std::string n = json::string_or(v, "name");
    if (n.rfind("dsa_sparse_attention", 0) == 0) names->push_back(n);
  }
  std::sort(names->begin(), names->end());
  return Status::ok();
}

}  // namespace mlakit
