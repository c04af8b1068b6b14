#include "io/file.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <unistd.h>

namespace mlakit::io {
namespace fs = std::filesystem;

namespace {

Status errno_error(const std::string& what, const std::string& path) {
  return Status::io_error(path + ": " + what + ": " + std::strerror(errno));
}

Status make_parent_dirs(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return Status::ok();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return Status::io_error(parent.string() + ": cannot create folder: " + ec.message());
  return Status::ok();
}

}  // namespace

Status read_file(const std::string& path, std::string* out) {
  if (out == nullptr) return Status::invalid_argument("read_file: out is null");
  out->clear();
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Status::io_error(path + ": is a folder, expected a file");
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return errno_error("cannot open", path);
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, got);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return errno_error("read failed", path);
  return Status::ok();
}

Status write_file_atomic(const std::string& path, const std::string& data) {
  MLAKIT_RETURN_IF_ERROR(make_parent_dirs(path));
  // A name no other writer of the same path uses: process id and a per-process counter.
  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return errno_error("cannot create", tmp);
  const bool wrote = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    Status s = errno_error("write failed", tmp);
    std::remove(tmp.c_str());
    return s;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = errno_error("cannot rename " + tmp + " to", path);
    std::remove(tmp.c_str());
    return s;
  }
  return Status::ok();
}

Status append_file(const std::string& path, const std::string& data) {
  MLAKIT_RETURN_IF_ERROR(make_parent_dirs(path));
  FILE* f = std::fopen(path.c_str(), "ab");
  if (f == nullptr) return errno_error("cannot open for appending", path);
  const bool wrote = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) return errno_error("append failed", path);
  return Status::ok();
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool is_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

Status list_files(const std::string& dir, const std::string& suffix, std::vector<std::string>* out) {
  if (out == nullptr) return Status::invalid_argument("list_files: out is null");
  out->clear();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Status::not_found(dir + ": no such folder");
  fs::recursive_directory_iterator it(dir, fs::directory_options::follow_directory_symlink, ec), end;
  if (ec) return Status::io_error(dir + ": cannot list: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::io_error(dir + ": cannot list: " + ec.message());
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    if (name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out->push_back(it->path().string());
  }
  std::sort(out->begin(), out->end());
  return Status::ok();
}

std::string join_path(const std::string& base, const std::string& path) {
  const fs::path p(path);
  if (p.is_absolute() || base.empty()) return p.lexically_normal().string();
  return (fs::path(base) / p).lexically_normal().string();
}

std::string parent_path(const std::string& path) { return fs::path(path).parent_path().string(); }

}  // namespace mlakit::io
