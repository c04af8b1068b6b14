// The tuner cache: file format, shape buckets and the once-per-process lookup for dispatch.
#include "runtime/tune_cache.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

#include "base/run_info.h"
#include "io/file.h"
#include "io/json.h"

namespace mlakit {
namespace {

constexpr const char* kFormat = "mlakit.tune";
constexpr int64_t kVersion = 1;

std::string entry_key(const std::string& device, const std::string& kernel, const std::string& bucket) {
  return device + '\x1f' + kernel + '\x1f' + bucket;
}

Status corrupt(const std::string& origin, const std::string& what) {
  return Status::io_error("tune cache " + origin + " is corrupt: " + what +
                          " (delete it or re-run `mlakit tune`; built-in tilings are used meanwhile)");
}

}  // namespace

std::string default_tune_cache_path() { return user_cache_dir() + "/tune.json"; }

int dsa_bucket_tokens(int num_tokens) {
  int t = 1;
  while (t < num_tokens && t < (1 << 30)) t *= 2;
  return t;
}

std::string dsa_shape_bucket(const DsaProblem& p) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "T%d.h%d.ckv%d.kpe%d.ps%d.k%d", dsa_bucket_tokens(p.num_tokens),
                p.num_heads, p.head_dim_ckv, p.head_dim_kpe, p.page_size, p.topk);
  return buf;
}

// --- TuneCache --------------------------------------------------------------------------------

Status TuneCache::load(const std::string& path) {
  entries_.clear();
  if (!io::file_exists(path)) return Status::ok();
  std::string text;
  if (Status st = io::read_file(path, &text); !st) return corrupt(path, st.message());
  return parse(text, path);
}

Status TuneCache::parse(const std::string& text, const std::string& origin) {
  entries_.clear();
  json::Value root;
  if (Status st = json::parse(text, &root); !st) return corrupt(origin, st.message());
  if (!root.is_object()) return corrupt(origin, "expected a JSON object, got " + json::describe(root));
  std::string format;
  int64_t version = 0;
  if (Status st = json::get_string(root, "format", &format); !st) return corrupt(origin, st.message());
  if (format != kFormat)
    return corrupt(origin, "format: expected \"" + std::string(kFormat) + "\", got \"" + format + "\"");
  if (Status st = json::get_int(root, "version", &version); !st) return corrupt(origin, st.message());
  if (version != kVersion)
    return corrupt(origin, "version: this mlakit reads version " + std::to_string(kVersion) + ", got " +
                               std::to_string(version));
  const json::Value* list = nullptr;
  if (Status st = json::get_member(root, "entries", &list); !st) return corrupt(origin, st.message());
  if (!list->is_array()) return corrupt(origin, "entries: expected an array, got " + json::describe(*list));

  std::vector<TuneEntry> parsed;
  for (size_t i = 0; i < list->size(); ++i) {
    const json::Value& e = (*list)[i];
    const std::string where = "entries[" + std::to_string(i) + "]";
    if (!e.is_object()) return corrupt(origin, where + ": expected an object, got " + json::describe(e));
    TuneEntry t;
    std::string tiling;
    for (auto [key, dst] : {std::pair<const char*, std::string*>{"device", &t.device},
                            {"kernel", &t.kernel_key},
                            {"bucket", &t.bucket},
                            {"tiling", &tiling}}) {
      if (Status st = json::get_string(e, key, dst, where); !st) return corrupt(origin, st.message());
      if (dst->empty()) return corrupt(origin, where + "." + key + ": empty");
    }
    if (Status st = DsaTiling::parse(tiling, &t.tiling); !st)
      return corrupt(origin, where + "." + st.message());
    if (Status st = json::get_number(e, "median_us", &t.median_us, where); !st)
      return corrupt(origin, st.message());
    // Optional provenance: absent or null is fine, a wrong type is not.
    auto opt_number = [&](const char* key, double* dst) -> Status {
      const json::Value* v = e.find(key);
      if (!v || v->is_null()) return Status::ok();
      return json::get_number(e, key, dst, where);
    };
    auto opt_string = [&](const char* key, std::string* dst) -> Status {
      const json::Value* v = e.find(key);
      if (!v || v->is_null()) return Status::ok();
      return json::get_string(e, key, dst, where);
    };
    double seed = 0, workloads = 0;
    for (Status st : {opt_number("default_us", &t.default_us), opt_number("seed", &seed),
                      opt_number("workloads", &workloads), opt_string("suite", &t.suite),
                      opt_string("git", &t.git), opt_string("updated", &t.updated)})
      if (!st) return corrupt(origin, st.message());
    t.seed = uint64_t(seed);
    t.workloads = int(workloads);
    parsed.push_back(std::move(t));
  }
  for (const TuneEntry& t : parsed) put(t);
  return Status::ok();
}

std::string TuneCache::dump() const {
  json::Value root = json::Value::object();
  root.set("format", kFormat).set("version", kVersion);
  json::Value list = json::Value::array();
  for (const TuneEntry& t : entries_) {
    json::Value e = json::Value::object();
    e.set("device", t.device)
        .set("kernel", t.kernel_key)
        .set("bucket", t.bucket)
        .set("tiling", t.tiling.name())
        .set("median_us", t.median_us)
        .set("default_us", t.default_us)
        .set("suite", t.suite)
        .set("seed", t.seed)
        .set("workloads", t.workloads)
        .set("git", t.git)
        .set("updated", t.updated);
    list.push_back(std::move(e));
  }
  root.set("entries", std::move(list));
  return root.dump(2) + "\n";
}

Status TuneCache::save(const std::string& path) const { return io::write_file_atomic(path, dump()); }

const TuneEntry* TuneCache::find(const std::string& device, const std::string& kernel_key,
                                 const std::string& bucket) const {
  for (const TuneEntry& t : entries_)
    if (t.device == device && t.kernel_key == kernel_key && t.bucket == bucket) return &t;
  return nullptr;
}

void TuneCache::put(const TuneEntry& entry) {
  for (TuneEntry& t : entries_)
    if (t.device == entry.device && t.kernel_key == entry.kernel_key && t.bucket == entry.bucket) {
      t = entry;
      return;
    }
  entries_.push_back(entry);
}

bool TuneCache::erase(const std::string& device, const std::string& kernel_key,
                      const std::string& bucket) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it)
    if (it->device == device && it->kernel_key == kernel_key && it->bucket == bucket) {
      entries_.erase(it);
      return true;
    }
  return false;
}

// --- the process-wide copy for dispatch ---------------------------------------------------------

namespace {

struct ProcessCache {
  std::mutex mutex;
  std::string override_path;
  bool loaded = false;
  std::string path;
  Status status;  // of loading: ok, kNotFound (no file) or kIoError (corrupt)
  std::unordered_map<std::string, DsaTiling> tilings;
};

ProcessCache& process_cache() {
  static ProcessCache c;
  return c;
}

std::string current_path(const ProcessCache& c) {
  return c.override_path.empty() ? default_tune_cache_path() : c.override_path;
}

void load_locked(ProcessCache& c) {
  c.path = current_path(c);
  c.tilings.clear();
  c.loaded = true;
  if (!io::file_exists(c.path)) {
    c.status = Status::not_found("no tune cache at " + c.path + " (run `mlakit tune`)");
    return;
  }
  TuneCache cache;
  c.status = cache.load(c.path);
  if (!c.status) return;
  for (const TuneEntry& t : cache.entries())
    c.tilings[entry_key(t.device, t.kernel_key, t.bucket)] = t.tiling;
}

}  // namespace

Status tuned_tiling(const std::string& device_name, const std::string& kernel_key,
                    const DsaProblem& problem, DsaTiling* out) {
  ProcessCache& c = process_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.loaded) load_locked(c);
  if (!c.status) return c.status;
  const std::string bucket = dsa_shape_bucket(problem);
  auto it = c.tilings.find(entry_key(device_name, kernel_key, bucket));
  if (it == c.tilings.end())
    return Status::not_found("no tuned tiling for " + kernel_key + " on " + device_name + ", bucket " +
                             bucket + " in " + c.path);
  *out = it->second;
  return Status::ok();
}

std::string tune_cache_path() {
  ProcessCache& c = process_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.loaded ? c.path : current_path(c);
}

void set_tune_cache_path(const std::string& path) {
  ProcessCache& c = process_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.override_path = path;
  c.loaded = false;
}

void reload_tune_cache() {
  ProcessCache& c = process_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.loaded = false;
}

}  // namespace mlakit
