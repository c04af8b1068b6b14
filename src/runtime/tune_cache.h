// The autotuner's persistent cache: the fastest measured tiling per (device name, kernel key,
// shape bucket), written by `mlakit tune` and read by the planner (runtime/planner.h) through
// tuned_tiling(). Op-neutral: buckets and tilings are the op's strings (OpContract::bucket,
// Tiling::name), checked here only against the common tiling-name grammar (plan/tiling_name.h).
//
// File: $MLAKIT_CACHE_DIR/tune.json, else $XDG_CACHE_HOME/mlakit/tune.json, else
// ~/.cache/mlakit/tune.json (the copy ceiling sits next to it, ceiling.json).
//   {"format": "mlakit.tune", "version": 1, "entries": [
//     {"device": "NVIDIA H200", "kernel": "dsa_decode.v1_splitk.bf16",
//      "bucket": "T8.h16.ckv512.kpe64.ps64.k2048", "tiling": "s16n64x2m4",
//      "median_us": 12.1, "default_us": 13.0, "suite": "dsa-contest", "seed": 1,
//      "workloads": 4, "git": "0c0e77e", "updated": "2026-11-21T10:00:00Z"}, ...]}
//
// Shape bucket: the op's (DSA: dsa_shape_bucket, plan/dsa/contract.h): every problem field that
// changes which tiling wins, with T rounded up to a power of two: T=3 and T=4 share bucket T4.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mlakit/status.h"

namespace mlakit {

std::string default_tune_cache_path();  // user_cache_dir() + "/tune.json"

// What an entry is found by.
struct TuneKey {
  std::string device;      // DeviceFacts::name, "NVIDIA H200"
  std::string kernel_key;  // "dsa_decode.v1_splitk.bf16"
  std::string bucket;      // the op's shape bucket, "T8.h16.ckv512.kpe64.ps64.k2048"
  bool operator==(const TuneKey&) const = default;
};

struct TuneEntry {
  std::string device;      // DeviceFacts::name, "NVIDIA H200"
  std::string kernel_key;  // "dsa_decode.v1_splitk.bf16"
  std::string bucket;      // the op's shape bucket
  std::string tiling;      // the op's tiling name, "s16n64x2m4"
  double median_us = 0;    // mean over the bucket's workloads of the median span
  double default_us = 0;   // the same for the built-in default tiling (0 = not measured)
  std::string suite;       // what it was tuned on
  uint64_t seed = 0;
  int workloads = 0;
  std::string git;         // revision of the tuner
  std::string updated;     // UTC, ISO 8601
};

class TuneCache {
 public:
  // Missing file: an empty cache, ok. Unreadable or malformed: kIoError naming the path and
  // what is wrong ("tune cache /x/tune.json is corrupt: line 3, column 5: ...").
  Status load(const std::string& path);
  // Atomic write (temporary file + rename); creates missing folders.
  Status save(const std::string& path) const;
  // Parses / serializes the JSON text itself (load/save minus the file).
  Status parse(const std::string& text, const std::string& origin);
  std::string dump() const;

  const TuneEntry* find(const TuneKey& key) const;
  // Inserts, or replaces the entry with the same key.
  void put(const TuneEntry& entry);
  // Removes the entry of `key`; false when there was none.
  bool erase(const TuneKey& key);
  const std::vector<TuneEntry>& entries() const { return entries_; }

 private:
  std::vector<TuneEntry>::const_iterator locate(const TuneKey& key) const;
  std::vector<TuneEntry> entries_;
};

TuneKey key_of(const TuneEntry& entry);

// The tuned tiling name for this device, kernel and bucket. Reads the cache file once per process
// (thread-safe; later calls are a hash-map probe). kNotFound when the file or the entry is absent;
// kIoError when the file is corrupt (the message says so; planning then uses the built-in
// default). `*tiling` is untouched unless ok. The caller parses and validates it for the exact
// problem.
Status tuned_tiling(const std::string& device_name, const std::string& kernel_key,
                    const std::string& bucket, std::string* tiling);

// The file tuned_tiling reads: set_tune_cache_path() if called with a non-empty path, else
// default_tune_cache_path() as of the first lookup.
std::string tune_cache_path();
// Points tuned_tiling at another file ("" = back to the default) and forgets the loaded copy.
void set_tune_cache_path(const std::string& path);
// Forgets the loaded copy (after the tuner rewrote the file); the next lookup reads it again.
void reload_tune_cache();

}  // namespace mlakit
