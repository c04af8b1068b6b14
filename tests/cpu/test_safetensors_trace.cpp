// safetensors: round trip, validation of offsets and sizes, truncated files, Git LFS pointers.
// FlashInfer-Trace: a tiny dataset written by the test (definition, JSONL, blobs) read back.
#include <gtest/gtest.h>

#include "temp_dir.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "io/file.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "workloads/dsa/trace.h"

namespace mlakit {
namespace {

using io::HostTensor;
using io::SafetensorsFile;
using test::TempDir;


void write_text(const std::string& path, const std::string& text) {
  ASSERT_TRUE(io::write_file_atomic(path, text).is_ok()) << path;
}

HostTensor bf16_tensor(const std::string& name, std::vector<int64_t> shape) {
  HostTensor t;
  t.name = name;
  t.dtype = "BF16";
  t.shape = std::move(shape);
  t.data.resize(size_t(t.numel()) * 2);
  for (size_t i = 0; i < t.data.size(); ++i) t.data[i] = uint8_t(i * 7 + 3);
  return t;
}

TEST(Safetensors, RoundTrip) {
  TempDir dir;
  std::vector<int32_t> idx(3 * 5);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i) - 2;
  HostTensor f32;
  f32.name = "scale";
  f32.dtype = "F32";
  f32.shape = {};  // a 0-d tensor: one element
  f32.data.resize(4);
  const float one_half = 0.5f;
  std::memcpy(f32.data.data(), &one_half, 4);
  const std::vector<HostTensor> tensors = {io::make_int32_tensor("sparse_indices", {3, 5}, idx),
                                           bf16_tensor("q_nope", {2, 3, 7}), f32,
                                           io::make_int32_tensor("empty", {0, 4}, {})};
  const std::string path = dir / "x.safetensors";
  ASSERT_TRUE(io::write_safetensors(path, tensors, {{"format", "pt"}}).is_ok());

  std::string bytes;
  ASSERT_TRUE(io::read_file(path, &bytes).is_ok());
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  EXPECT_EQ((8 + header_len) % 8, 0u) << "the data section starts 8-byte aligned";

  SafetensorsFile f;
  const Status s = io::read_safetensors(path, &f);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_EQ(f.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(f.tensors[i].name, tensors[i].name);
    EXPECT_EQ(f.tensors[i].dtype, tensors[i].dtype);
    EXPECT_EQ(f.tensors[i].shape, tensors[i].shape);
    EXPECT_EQ(f.tensors[i].data, tensors[i].data);
  }
  EXPECT_EQ(f.metadata.at("format"), "pt");
  std::vector<int32_t> back;
  std::vector<int64_t> shape;
  ASSERT_TRUE(io::tensor_as_int32(f, "sparse_indices", &back, &shape).is_ok());
  EXPECT_EQ(back, idx);
  EXPECT_EQ(shape, (std::vector<int64_t>{3, 5}));
  Status wrong = io::tensor_as_int32(f, "q_nope", &back, &shape, "file.safetensors");
  EXPECT_EQ(wrong.message(), "file.safetensors: tensor \"q_nope\": expected dtype I32, got BF16");
  wrong = io::tensor_as_int32(f, "nope", &back, &shape);
  EXPECT_EQ(wrong.code(), Code::kNotFound);
  EXPECT_NE(wrong.message().find("sparse_indices, q_nope, scale, empty"), std::string::npos) << wrong.message();
}

TEST(Safetensors, TruncatedFile) {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  ASSERT_TRUE(io::write_safetensors(path, {bf16_tensor("a", {4, 8}), bf16_tensor("b", {16})}).is_ok());
  std::string bytes;
  ASSERT_TRUE(io::read_file(path, &bytes).is_ok());
  write_text(path, bytes.substr(0, bytes.size() - 10));
  SafetensorsFile f;
  Status s = io::read_safetensors(path, &f);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find(path + ": truncated: tensor \"b\" ends at byte 96"), std::string::npos) << s.message();
  // Cut inside the header.
  write_text(path, bytes.substr(0, 20));
  s = io::read_safetensors(path, &f);
  EXPECT_NE(s.message().find("exceeds the file"), std::string::npos) << s.message();
  write_text(path, "abc");
  s = io::read_safetensors(path, &f);
  EXPECT_NE(s.message().find("truncated: 3 bytes"), std::string::npos) << s.message();
  s = io::read_safetensors(dir / "missing.safetensors", &f);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find("missing.safetensors"), std::string::npos) << s.message();
}

TEST(Safetensors, GitLfsPointer) {
  TempDir dir;
  const std::string path = dir / "lfs.safetensors";
  write_text(path,
             "version https://git-lfs.github.com/spec/v1\n"
             "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\n"
             "size 65624\n");
  SafetensorsFile f;
  const Status s = io::read_safetensors(path, &f);
  EXPECT_EQ(s.code(), Code::kIoError);
  EXPECT_NE(s.message().find("Git LFS pointer"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("git lfs pull"), std::string::npos) << s.message();
}

// A file written by hand: header text + data, for the validation errors.
std::string raw_file(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + std::string(data_bytes, '\x01');
}

TEST(Safetensors, ValidatesTheHeader) {
  TempDir dir;
  const std::string path = dir / "h.safetensors";
  SafetensorsFile f;
  auto expect = [&](const std::string& header, size_t data, const std::string& what) {
    write_text(path, raw_file(header, data));
    const Status s = io::read_safetensors(path, &f);
    EXPECT_EQ(s.code(), Code::kIoError) << header;
    EXPECT_NE(s.message().find(what), std::string::npos) << header << "\n" << s.message();
  };
  expect(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,12]}})", 12, "hold 12 bytes, but shape [2] of I32 needs 8");
  expect(R"({"a":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})", 8, "unknown dtype \"Q4\"");
  expect(R"({"a":{"dtype":"I32","shape":[-2],"data_offsets":[0,8]}})", 8, "non-negative integers");
  expect(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[8,0]}})", 8, "data_offsets");
  expect(R"({"a":{"dtype":"I32","shape":[2]}})", 8, "data_offsets");
  expect(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", 8, "tensor \"a\": missing key \"dtype\"");
  expect(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[2],"data_offsets":[4,12]}})",
         12, "overlap");
  expect(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]})", 8, "malformed header JSON: line 1, column 54");
  expect(R"([1, 2])", 0, "header is not a JSON object");
  write_text(path, raw_file(R"({"a":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})", 8));
  EXPECT_TRUE(io::read_safetensors(path, &f).is_ok());
}

// --- FlashInfer-Trace -------------------------------------------------------------------------

std::string definition_json(const std::string& name, int page_size) {
  const auto var = [](const char* d) { return json::Value{{"type", "var"}, {"description", d}}; };
  const auto cst = [](int v) { return json::Value{{"type", "const"}, {"value", v}}; };
  const json::Value axes = {{"num_tokens", var("tokens")}, {"num_qo_heads", cst(16)},
                            {"head_dim_ckv", cst(512)},    {"head_dim_kpe", cst(64)},
                            {"page_size", cst(page_size)}, {"topk", cst(2048)},
                            {"num_pages", var("pages")}};
  const auto tensor = [](std::vector<std::string> shape, const char* dtype) {
    return json::Value{{"shape", shape}, {"dtype", dtype}};
  };
  const json::Value inputs = {{"q_nope", tensor({"num_tokens", "num_qo_heads", "head_dim_ckv"}, "bfloat16")},
                              {"sparse_indices", tensor({"num_tokens", "topk"}, "int32")},
                              {"sm_scale", {{"shape", nullptr}, {"dtype", "float32"}}}};
  const json::Value def = {
      {"name", name}, {"op_type", "dsa_paged"}, {"axes", axes}, {"inputs", inputs},
      {"reference", "import torch\ndef run(q_nope, q_pe, ckv_cache, kpe_cache, sparse_indices, sm_scale): ..."}};
  return json::dump(def, 2);
}

std::string workload_line(const std::string& def, const std::string& uuid, int T, int pages, const json::Value& si,
                          double sm_scale) {
  const json::Value inputs = {{"q_nope", {{"type", "random"}}},
                              {"sparse_indices", si},
                              {"sm_scale", {{"type", "scalar"}, {"value", sm_scale}}}};
  const json::Value w = {{"uuid", uuid}, {"axes", {{"num_tokens", T}, {"num_pages", pages}}}, {"inputs", inputs}};
  const json::Value line = {{"definition", def}, {"workload", w}, {"solution", nullptr}, {"evaluation", nullptr}};
  return json::dump(line) + "\n";
}

json::Value safetensors_input(const std::string& path) {
  return {{"type", "safetensors"}, {"path", path}, {"tensor_key", "sparse_indices"}};
}

std::vector<int32_t> some_indices(int T, int valid, int32_t base) {
  std::vector<int32_t> v(size_t(T) * 2048, -1);
  for (int t = 0; t < T; ++t)
    for (int k = 0; k < valid; ++k) v[size_t(t) * 2048 + k] = base + t * 64 + k;
  return v;
}

class TraceDataset : public ::testing::Test {
 protected:
  void SetUp() override {
    def_ = kDsaDefinitionPs64;
    write_text(dir_ / ("definitions/dsa_paged/" + def_ + ".json"), definition_json(def_, 64));
    write_text(dir_ / "definitions/dsa_paged/dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps1.json",
               definition_json(kDsaDefinitionPs1, 1));
    write_text(dir_ / "definitions/gemm/gemm_n4096.json", R"({"name": "gemm_n4096", "axes": {}})");
    idx_a_ = some_indices(2, 100, 0);
    idx_b_ = some_indices(1, 7, 6400);
    const std::string blob = "blob/workloads/dsa_paged/" + def_ + "/";
    ASSERT_TRUE(io::write_safetensors(dir_ / (blob + "a.safetensors"), {io::make_int32_tensor("sparse_indices", {2, 2048}, idx_a_)}).is_ok());
    ASSERT_TRUE(io::write_safetensors(dir_ / (blob + "b.safetensors"), {io::make_int32_tensor("sparse_indices", {1, 2048}, idx_b_)}).is_ok());
    lines_ = workload_line(def_, "uuid-a", 2, 8462, safetensors_input("./" + blob + "a.safetensors"), 0.125) +
             "\n" +  // blank lines are skipped
             workload_line("some_other_definition", "uuid-x", 1, 1, json::Value{{"type", "random"}}, 1) +
             workload_line(def_, "uuid-b", 1, 200, safetensors_input(blob + "b.safetensors"), 0.25) +
             workload_line(def_, "uuid-r", 3, 500, json::Value{{"type", "random"}}, 0.5);
    write_text(dir_ / ("workloads/dsa_paged/" + def_ + ".jsonl"), lines_);
  }

  Status load(DsaSuite* s, const std::string& def = kDsaDefinitionPs64) {
    DsaTraceOptions o;
    o.definition = def;
    o.seed = 5;
    return load_dsa_trace(dir_.path(), o, s);
  }

  TempDir dir_;
  std::string def_, lines_;
  std::vector<int32_t> idx_a_, idx_b_;
};

TEST_F(TraceDataset, ReadsWorkloadsAxesIndicesAndScale) {
  DsaSuite s;
  const Status st = load(&s);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(s.workloads.size(), 3u);
  const DsaWorkload& a = s.workloads[0];
  EXPECT_EQ(a.name, "trace-00");
  EXPECT_EQ(a.uuid, "uuid-a");
  EXPECT_EQ(a.problem.to_string(), "T=2 H=16 ckv=512 kpe=64 pages=8462 ps=64 topk=2048");
  EXPECT_EQ(a.indices, idx_a_);
  EXPECT_EQ(a.sm_scale, 0.125f);
  EXPECT_EQ(valid_per_row(a), (std::vector<int>{100, 100}));
  const DsaWorkload& b = s.workloads[1];
  EXPECT_EQ(b.uuid, "uuid-b");
  EXPECT_EQ(b.problem.num_pages, 200);
  EXPECT_EQ(b.indices, idx_b_);
  EXPECT_EQ(b.sm_scale, 0.25f);
  // "random" sparse_indices: synthesized full top-k rows.
  const DsaWorkload& r = s.workloads[2];
  EXPECT_EQ(r.name, "trace-02");
  EXPECT_EQ(r.problem.num_tokens, 3);
  EXPECT_EQ(valid_per_row(r), (std::vector<int>{2048, 2048, 2048}));
  EXPECT_NE(s.description.find("3 workloads"), std::string::npos) << s.description;
  DsaSuite again;
  ASSERT_TRUE(load(&again).is_ok());
  EXPECT_EQ(again.workloads[2].indices, r.indices);

  std::vector<std::string> names;
  ASSERT_TRUE(list_dsa_trace_definitions(dir_.path(), &names).is_ok());
  EXPECT_EQ(names, (std::vector<std::string>{kDsaDefinitionPs1, kDsaDefinitionPs64}));
}

TEST_F(TraceDataset, PageSize1Definition) {
  write_text(dir_ / ("workloads/dsa_paged/" + std::string(kDsaDefinitionPs1) + ".jsonl"),
             workload_line(kDsaDefinitionPs1, "uuid-p", 2, 541568, json::Value{{"type", "random"}}, 0.1));
  DsaSuite s;
  const Status st = load(&s, kDsaDefinitionPs1);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(s.workloads.size(), 1u);
  EXPECT_EQ(s.workloads[0].problem.page_size, 1);
  EXPECT_EQ(s.workloads[0].problem.num_pages, 541568);
}

TEST_F(TraceDataset, ErrorsNameFileLineAndField) {
  DsaSuite s;
  // A missing axis.
  std::string bad = lines_;
  bad.replace(bad.find("\"num_pages\":200"), 15, "\"pages\":200");
  const std::string jsonl = dir_ / ("workloads/dsa_paged/" + def_ + ".jsonl");
  write_text(jsonl, bad);
  Status st = load(&s);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_EQ(st.message(), jsonl + ": line 4: workload.axes: missing key \"num_pages\"");

  // A safetensors file that is still a Git LFS pointer.
  write_text(jsonl, lines_);
  write_text(dir_ / ("blob/workloads/dsa_paged/" + def_ + "/b.safetensors"),
             "version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 8\n");
  st = load(&s);
  EXPECT_EQ(st.code(), Code::kIoError);
  EXPECT_NE(st.message().find("line 4"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("git lfs pull"), std::string::npos) << st.message();

  // A tensor of the wrong shape.
  ASSERT_TRUE(io::write_safetensors(dir_ / ("blob/workloads/dsa_paged/" + def_ + "/b.safetensors"),
                                    {io::make_int32_tensor("sparse_indices", {2, 2048}, some_indices(2, 1, 0))})
                  .is_ok());
  st = load(&s);
  EXPECT_NE(st.message().find("has shape [2, 2048], expected [1, 2048] (num_tokens, topk)"), std::string::npos)
      << st.message();

  // Malformed JSONL.
  write_text(jsonl, lines_ + "{\"definition\": \n");
  st = load(&s);
  const std::string at = ": line 6, column 16: syntax error while parsing value - unexpected end of input";
  EXPECT_NE(st.message().find(jsonl + at), std::string::npos) << st.message();

  // An unknown definition lists the ones present.
  st = load(&s, "dsa_sparse_attention_h16_ckv512_kpe64_topk2048_ps128");
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("gemm_n4096"), std::string::npos) << st.message();

  // Not a dataset at all.
  DsaTraceOptions o;
  st = load_dsa_trace(dir_ / "blob", o, &s);
  EXPECT_EQ(st.code(), Code::kNotFound);
  EXPECT_NE(st.message().find("no definitions/ folder"), std::string::npos) << st.message();
  st = load_dsa_trace(dir_ / "nowhere", o, &s);
  EXPECT_EQ(st.code(), Code::kNotFound);
}

TEST_F(TraceDataset, PathsRelativeToTheJsonlAlsoResolve) {
  // Older datasets wrote blob paths relative to the JSONL file.
  const std::string sub = dir_ / ("workloads/dsa_paged/" + def_ + ".jsonl");
  ASSERT_TRUE(io::write_safetensors(dir_ / "workloads/dsa_paged/local.safetensors",
                                    {io::make_int32_tensor("sparse_indices", {1, 2048}, idx_b_)})
                  .is_ok());
  write_text(sub, workload_line(def_, "uuid-l", 1, 200, safetensors_input("local.safetensors"), 0.5));
  DsaSuite s;
  const Status st = load(&s);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(s.workloads[0].indices, idx_b_);
}

}  // namespace
}  // namespace mlakit
