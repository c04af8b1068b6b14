// safetensors files: an 8-byte little-endian header length N, N bytes of JSON header
//   {"name": {"dtype": "I32", "shape": [8, 2048], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value"}}
// and the raw little-endian tensor data; offsets count from the first byte after the header.
// The reader checks every offset and size against the file; a Git LFS pointer file (the text a
// clone without `git lfs pull` leaves in place) is reported as such.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mlakit/status.h"

namespace mlakit::io {

// Bytes per element of a safetensors dtype ("F32", "BF16", "I32", ...); 0 when unknown.
int safetensors_dtype_size(const std::string& dtype);

struct HostTensor {
  std::string name;
  std::string dtype;            // safetensors spelling: "I32", "BF16", "F32", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;    // numel() * dtype size bytes, little-endian

  int64_t numel() const;
  std::string shape_string() const;  // "[8, 2048]"
};

struct SafetensorsFile {
  std::vector<HostTensor> tensors;             // in header order
  std::map<std::string, std::string> metadata; // "__metadata__" (string values only)

  const HostTensor* find(const std::string& name) const;  // null when absent
};

// Reads and validates the whole file. Errors (io_error) name the path and the problem: missing
// file, Git LFS pointer, header length beyond the file, malformed header JSON, unknown dtype,
// data_offsets out of bounds, size not equal to shape x dtype, overlapping tensors.
Status read_safetensors(const std::string& path, SafetensorsFile* out);

// Writes the tensors (in the given order) and metadata; the header is padded with spaces to a
// multiple of 8 bytes so the data section starts aligned. Atomic (temporary file, then rename).
Status write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

// The tensor `name` of `file` as int32 values, checking dtype I32; `where` prefixes messages.
Status tensor_as_int32(const SafetensorsFile& file, const std::string& name,
                       std::vector<int32_t>* values, std::vector<int64_t>* shape,
                       const std::string& where = "");

// A HostTensor of int32 values (dtype I32) — for writers and tests.
HostTensor make_int32_tensor(const std::string& name, const std::vector<int64_t>& shape,
                             const std::vector<int32_t>& values);

// True when `bytes` begins like a Git LFS pointer file.
bool is_git_lfs_pointer(const std::string& bytes);

}  // namespace mlakit::io
