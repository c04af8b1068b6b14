#include "io/safetensors.h"

#include <algorithm>
#include <cstring>

#include "io/file.h"
#include "io/json.h"

namespace mlakit::io {

namespace {

// A header longer than this is not a tensor index but a corrupt length field.
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;
constexpr const char* kLfsPrefix = "version https://git-lfs.github.com/spec/v1";

uint64_t read_le64(const std::string& bytes) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[size_t(i)]);
  return v;
}

void append_le64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(char((v >> (8 * i)) & 0xff));
}

Status fail(const std::string& path, const std::string& what) {
  return Status::io_error(path + ": " + what);
}

}  // namespace

int safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, int> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"U16", 2},
      {"I16", 2},  {"F16", 2}, {"BF16", 2}, {"U32", 4},    {"I32", 4},     {"F32", 4},
      {"U64", 8},  {"I64", 8}, {"F64", 8}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string HostTensor::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

const HostTensor* SafetensorsFile::find(const std::string& name) const {
  for (const HostTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

bool is_git_lfs_pointer(const std::string& bytes) {
  return bytes.rfind(kLfsPrefix, 0) == 0;
}

namespace {

// The 8-byte length and the JSON header after it; *data_begin is where the data section starts.
Status read_header(const std::string& path, const std::string& bytes, json::Value* header,
                   uint64_t* data_begin) {
  if (is_git_lfs_pointer(bytes))
    return fail(path, "is a Git LFS pointer file, not the tensor data; run `git lfs pull` in the "
                      "dataset's repository (with git-lfs installed) to fetch the content");
  if (bytes.size() < 8)
    return fail(path, "truncated: " + std::to_string(bytes.size()) +
                          " bytes, a safetensors file starts with an 8-byte header length");
  const uint64_t header_len = read_le64(bytes);
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - 8)
    return fail(path, "header length " + std::to_string(header_len) + " exceeds the file (" +
                          std::to_string(bytes.size()) + " bytes): truncated or not a safetensors file");
  Status s = json::parse(std::string_view(bytes).substr(8, header_len), header);
  if (!s.is_ok()) return fail(path, "malformed header JSON: " + s.message());
  if (!header->is_object()) return fail(path, "header is not a JSON object");
  *data_begin = 8 + header_len;
  return Status::ok();
}

// One header entry: dtype, shape and data_offsets [begin, end) checked against each other and
// against the `data_size` bytes of the data section.
Status read_tensor_entry(const std::string& path, const std::string& name, const json::Value& info,
                         uint64_t data_size, HostTensor* t, uint64_t* begin, uint64_t* end) {
  const std::string where = "tensor \"" + name + "\"";
  t->name = name;
  Status st = json::get_string(info, "dtype", &t->dtype, where);
  if (!st.is_ok()) return fail(path, st.message());
  const int elem = safetensors_dtype_size(t->dtype);
  if (elem == 0) return fail(path, where + ": unknown dtype \"" + t->dtype + "\"");
  const json::Value& shape = json::member(info, "shape");
  if (!shape.is_array()) return fail(path, where + ": expected \"shape\" as an array of integers");
  for (const json::Value& d : shape) {
    if (!json::is_integer(d) || json::as_int(d) < 0)
      return fail(path, where + ": shape entries must be non-negative integers, got " + json::describe(d));
    t->shape.push_back(json::as_int(d));
  }
  const json::Value& offsets = json::member(info, "data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !json::is_integer(offsets[0]) || !json::is_integer(offsets[1]) ||
      json::as_int(offsets[0]) < 0 || json::as_int(offsets[1]) < json::as_int(offsets[0]))
    return fail(path, where + ": expected \"data_offsets\" as [begin, end] with 0 <= begin <= end");
  *begin = uint64_t(json::as_int(offsets[0]));
  *end = uint64_t(json::as_int(offsets[1]));
  // Overflow-safe size check: numel * elem must equal end - begin.
  uint64_t expected = uint64_t(elem);
  for (int64_t d : t->shape) {
    if (d != 0 && expected > UINT64_MAX / uint64_t(d))
      return fail(path, where + ": shape " + t->shape_string() + " overflows");
    expected *= uint64_t(d);
  }
  if (*end - *begin != expected)
    return fail(path, where + ": data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) +
                          "] hold " + std::to_string(*end - *begin) + " bytes, but shape " +
                          t->shape_string() + " of " + t->dtype + " needs " + std::to_string(expected));
  if (*end > data_size)
    return fail(path, "truncated: " + where + " ends at byte " + std::to_string(*end) +
                          " of the data section, which holds only " + std::to_string(data_size) + " bytes");
  return Status::ok();
}

}  // namespace

Status read_safetensors(const std::string& path, SafetensorsFile* out) {
  if (out == nullptr) return Status::invalid_argument("read_safetensors: out is null");
  *out = {};
  std::string bytes;
  MLAKIT_RETURN_IF_ERROR(read_file(path, &bytes));
  json::Value header;
  uint64_t data_begin = 0;
  MLAKIT_RETURN_IF_ERROR(read_header(path, bytes, &header, &data_begin));
  const uint64_t data_size = bytes.size() - data_begin;
  struct Span {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Span> spans;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const json::Value& info = it.value();
    if (name == "__metadata__") {
      if (info.is_object())
        for (auto m = info.begin(); m != info.end(); ++m)
          if (m.value().is_string()) out->metadata[m.key()] = m.value().get<std::string>();
      continue;
    }
    HostTensor t;
    uint64_t begin = 0, end = 0;
    MLAKIT_RETURN_IF_ERROR(read_tensor_entry(path, name, info, data_size, &t, &begin, &end));
    t.data.assign(bytes.begin() + std::ptrdiff_t(data_begin + begin),
                  bytes.begin() + std::ptrdiff_t(data_begin + end));
    if (end > begin) spans.push_back({begin, end, out->tensors.size()});  // empty tensors overlap nothing
    out->tensors.push_back(std::move(t));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].begin < spans[i - 1].end)
      return fail(path, "tensors \"" + out->tensors[spans[i - 1].index].name + "\" and \"" +
                            out->tensors[spans[i].index].name + "\" overlap in the data section");
  return Status::ok();
}

Status write_safetensors(const std::string& path, const std::vector<HostTensor>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  json::Value header = json::Value::object();
  if (!metadata.empty()) {
    json::Value m = json::Value::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header["__metadata__"] = std::move(m);
  }
  uint64_t offset = 0;
  for (const HostTensor& t : tensors) {
    const int elem = safetensors_dtype_size(t.dtype);
    if (elem == 0) return Status::invalid_argument("tensor \"" + t.name + "\": unknown dtype \"" + t.dtype + "\"");
    if (t.name == "__metadata__" || header.contains(t.name))
      return Status::invalid_argument("tensor name \"" + t.name + "\" is reserved or repeated");
    const uint64_t bytes = uint64_t(t.numel()) * uint64_t(elem);
    if (t.data.size() != bytes)
      return Status::invalid_argument("tensor \"" + t.name + "\": " + std::to_string(t.data.size()) +
                                      " data bytes, but shape " + t.shape_string() + " of " + t.dtype +
                                      " needs " + std::to_string(bytes));
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = json::dump(header);
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-byte aligned
  std::string file;
  file.reserve(8 + text.size() + offset);
  append_le64(text.size(), &file);
  file += text;
  for (const HostTensor& t : tensors) file.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return write_file_atomic(path, file);
}

Status tensor_as_int32(const SafetensorsFile& file, const std::string& name, std::vector<int32_t>* values,
                       std::vector<int64_t>* shape, const std::string& where) {
  const std::string prefix = where.empty() ? "" : where + ": ";
  const HostTensor* t = file.find(name);
  if (t == nullptr) {
    std::string names;
    for (const HostTensor& x : file.tensors) names += (names.empty() ? "" : ", ") + x.name;
    return Status::not_found(prefix + "no tensor \"" + name + "\" (the file holds: " +
                             (names.empty() ? "none" : names) + ")");
  }
  if (t->dtype != "I32")
    return Status::invalid_argument(prefix + "tensor \"" + name + "\": expected dtype I32, got " + t->dtype);
  values->resize(size_t(t->numel()));
  if (!t->data.empty()) std::memcpy(values->data(), t->data.data(), t->data.size());
  if (shape != nullptr) *shape = t->shape;
  return Status::ok();
}

HostTensor make_int32_tensor(const std::string& name, const std::vector<int64_t>& shape,
                             const std::vector<int32_t>& values) {
  HostTensor t;
  t.name = name;
  t.dtype = "I32";
  t.shape = shape;
  t.data.resize(values.size() * sizeof(int32_t));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

}  // namespace mlakit::io
