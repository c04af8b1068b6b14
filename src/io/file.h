// Whole-file helpers shared by the readers and writers of src/io (JSON, JSONL, safetensors, trace).
// Every failure is a Status::io_error naming the path and the reason (errno text).
#pragma once

#include <string>
#include <vector>

#include "mlakit/status.h"

namespace mlakit::io {

// Reads the whole file (binary-safe) into `out`.
Status read_file(const std::string& path, std::string* out);

// Writes `data` to `path` atomically: a temporary file in the same folder, then rename. Creates
// missing parent folders.
Status write_file_atomic(const std::string& path, const std::string& data);

// Appends `data` to `path` (created when missing, parent folders too). One write call, so lines
// appended by concurrent processes do not interleave below the pipe-buffer size.
Status append_file(const std::string& path, const std::string& data);

bool file_exists(const std::string& path);
bool is_directory(const std::string& path);

// Regular files under `dir` (recursively) whose name ends with `suffix` (".json"), sorted.
Status list_files(const std::string& dir, const std::string& suffix, std::vector<std::string>* out);

// `path` when absolute, else `base` / `path`, lexically normalized.
std::string join_path(const std::string& base, const std::string& path);
std::string parent_path(const std::string& path);

}  // namespace mlakit::io
