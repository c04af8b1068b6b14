// The tuner cache: file format, shape buckets and the once-per-process lookup for dispatch.
#include "runtime/tune_cache.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "base/hash.h"
#include "base/run_info.h"
#include "io/file.h"
#include "io/json.h"
#include "plan/tiling_name.h"

namespace mlakit {
namespace {

constexpr const char* kFormat = "mlakit.tune";
constexpr int64_t kVersion = 1;

struct TuneKeyHash {
  size_t operator()(const TuneKey& k) const {
    const std::hash<std::string> h;
    return hash_combine(hash_combine(h(k.device), h(k.kernel_key)), h(k.bucket));
  }
};

Status corrupt(const std::string& origin, const std::string& what) {
  return Status::io_error("tune cache " + origin + " is corrupt: " + what +
                          " (delete it or re-run `mlakit tune`; built-in tilings are used meanwhile)");
}

}  // namespace

std::string default_tune_cache_path() { return user_cache_dir() + "/tune.json"; }

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
    for (auto [key, dst] : {std::pair<const char*, std::string*>{"device", &t.device},
                            {"kernel", &t.kernel_key},
                            {"bucket", &t.bucket},
                            {"tiling", &t.tiling}}) {
      if (Status st = json::get_string(e, key, dst, where); !st) return corrupt(origin, st.message());
      if (dst->empty()) return corrupt(origin, where + "." + key + ": empty");
    }
    if (!is_tiling_name(t.tiling))
      return corrupt(origin, where + ".tiling: expected a tiling name of <letters><number> fields "
                             "(e.g. s16n64x2m4), got '" + t.tiling + "'");
    if (Status st = json::get_number(e, "median_us", &t.median_us, where); !st)
      return corrupt(origin, st.message());
    // Optional provenance: absent or null is fine, a wrong type is not.
    double seed = 0, workloads = 0;
    for (Status st : {json::get_optional_number(e, "default_us", &t.default_us, where),
                      json::get_optional_number(e, "seed", &seed, where),
                      json::get_optional_number(e, "workloads", &workloads, where),
                      json::get_optional_string(e, "suite", &t.suite, where),
                      json::get_optional_string(e, "git", &t.git, where),
                      json::get_optional_string(e, "updated", &t.updated, where)})
      if (!st) return corrupt(origin, st.message());
    t.seed = uint64_t(seed);
    t.workloads = int(workloads);
    parsed.push_back(std::move(t));
  }
  for (const TuneEntry& t : parsed) put(t);
  return Status::ok();
}

std::string TuneCache::dump() const {
  json::Value list = json::Value::array();
  for (const TuneEntry& t : entries_)
    list.push_back({{"device", t.device},
                    {"kernel", t.kernel_key},
                    {"bucket", t.bucket},
                    {"tiling", t.tiling},
                    {"median_us", json::number(t.median_us)},
                    {"default_us", json::number(t.default_us)},
                    {"suite", t.suite},
                    {"seed", t.seed},
                    {"workloads", t.workloads},
                    {"git", t.git},
                    {"updated", t.updated}});
  const json::Value root = {{"format", kFormat}, {"version", kVersion}, {"entries", std::move(list)}};
  return json::dump(root, 2) + "\n";
}

Status TuneCache::save(const std::string& path) const { return io::write_file_atomic(path, dump()); }

TuneKey key_of(const TuneEntry& e) { return {e.device, e.kernel_key, e.bucket}; }

std::vector<TuneEntry>::const_iterator TuneCache::locate(const TuneKey& key) const {
  return std::find_if(entries_.begin(), entries_.end(), [&](const TuneEntry& e) { return key_of(e) == key; });
}

const TuneEntry* TuneCache::find(const TuneKey& key) const {
  const auto it = locate(key);
  return it == entries_.end() ? nullptr : &*it;
}

void TuneCache::put(const TuneEntry& entry) {
  const auto it = locate(key_of(entry));
  if (it == entries_.end()) entries_.push_back(entry);
  else entries_[size_t(it - entries_.begin())] = entry;
}

bool TuneCache::erase(const TuneKey& key) {
  const auto it = locate(key);
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

// --- the process-wide copy for dispatch ---------------------------------------------------------

namespace {

struct ProcessCache {
  std::mutex mutex;
  std::string override_path;
  bool loaded = false;
  std::string path;
  Status status;  // of loading: ok, kNotFound (no file) or kIoError (corrupt)
  std::unordered_map<TuneKey, std::string, TuneKeyHash> tilings;
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
    c.tilings[key_of(t)] = t.tiling;
}

}  // namespace

Status tuned_tiling(const std::string& device_name, const std::string& kernel_key,
                    const std::string& bucket, std::string* out) {
  ProcessCache& c = process_cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (!c.loaded) load_locked(c);
  if (!c.status) return c.status;
  auto it = c.tilings.find(TuneKey{device_name, kernel_key, bucket});
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
