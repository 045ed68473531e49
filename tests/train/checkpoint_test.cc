// SPDX-License-Identifier: Apache-2.0
// Checkpoints and the safetensors format: round trips, the header's byte layout, every kind
// of malformed file rejected naming the file and the tensor, the check against a network, and
// atomic saves (a full disk or a bad directory leaves the previous checkpoint loadable and no
// temporary behind). PyTorch's side is checkpoint_vs_torchvision.py.
#include "train/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "models/resnet.h"
#include "test_util.h"

namespace stoker {
namespace {

using test::TempDir;

Network resnet18(int classes) {
  ResNetConfig c;
  c.depth = 18;
  c.num_classes = classes;
  return build_resnet(c);
}

// A few small tensors of both dtypes, a scalar and an empty one: quick to write.
Checkpoint small_checkpoint(float base, size_t floats = 1000) {
  std::vector<float> w(floats);
  for (size_t i = 0; i < w.size(); ++i) w[i] = base + static_cast<float>(i);
  const std::vector<int64_t> count = {42};
  Checkpoint c;
  c.tensors.push_back(make_f32_tensor("w", {static_cast<int64_t>(floats)}, w));
  c.tensors.push_back(make_i64_tensor("n", {}, count));
  c.tensors.push_back(make_f32_tensor("empty", {0, 3}, {}));
  c.metadata["note"] = "small";
  return c;
}

void expect_same(const Checkpoint& a, const Checkpoint& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name) << i;
    EXPECT_EQ(a.tensors[i].dtype, b.tensors[i].dtype) << a.tensors[i].name;
    EXPECT_EQ(a.tensors[i].shape, b.tensors[i].shape) << a.tensors[i].name;
    EXPECT_TRUE(a.tensors[i].bytes == b.tensors[i].bytes) << a.tensors[i].name;
  }
  EXPECT_EQ(a.metadata, b.metadata);
}

// Files in `dir` other than `keep`: a temporary left behind shows up here.
std::vector<std::string> other_files(const std::string& dir, const std::string& keep) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() != keep) names.push_back(e.path().filename().string());
  }
  return names;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Checkpoint, ResNet18RoundTripsWithMomentumAndRunState) {
  TempDir dir;
  const Network net = resnet18(10);
  Checkpoint ckpt = init_checkpoint(net, 7);
  ASSERT_EQ(ckpt.tensors.size(), 122u);
  add_zero_momentum(ckpt, net);
  ASSERT_EQ(ckpt.tensors.size(), 122u + 62u);  // len(list(resnet18().parameters())) == 62
  RunState state{3, 1234, 5678, 99, R"({"arch":"resnet18","lr":0.1})"};
  set_run_state(ckpt, state);
  const std::string path = dir / "r18.safetensors";
  save_checkpoint(path, ckpt);

  const Checkpoint back = load_checkpoint(path);
  expect_same(ckpt, back);
  check_checkpoint(back, net, path);
  const RunState s = get_run_state(back, path);
  EXPECT_EQ(s.epoch, 3);
  EXPECT_EQ(s.step, 1234);
  EXPECT_EQ(s.sampler_position, 5678);
  EXPECT_EQ(s.seed, 99u);
  EXPECT_EQ(s.config, state.config);
  EXPECT_EQ(back.metadata.at("format"), "stoker-checkpoint/1");
  EXPECT_TRUE(other_files(dir.path(), "r18.safetensors").empty());

  const Tensor* nbt = find_tensor(back, "layer1.0.bn1.num_batches_tracked");
  ASSERT_NE(nbt, nullptr);
  EXPECT_EQ(nbt->dtype, TensorDType::i64);
  EXPECT_TRUE(nbt->shape.empty());
  int64_t count = -1;
  copy_values(*nbt, std::span<int64_t>(&count, 1));
  EXPECT_EQ(count, 0);
  std::vector<float> var(64);
  copy_values(*find_tensor(back, "bn1.running_var"), std::span<float>(var));
  EXPECT_EQ(var, std::vector<float>(64, 1.0f));
}

TEST(Checkpoint, InitIsAPureFunctionOfTheSeed) {
  const Network net = resnet18(10);
  const Checkpoint a = init_checkpoint(net, 1);
  const Checkpoint b = init_checkpoint(net, 1);
  const Checkpoint c = init_checkpoint(net, 2);
  expect_same(a, b);
  EXPECT_FALSE(a.tensors[0].bytes == c.tensors[0].bytes);  // conv1.weight
  EXPECT_TRUE(a.tensors[1].bytes == c.tensors[1].bytes);   // bn1.weight: ones either way
}

TEST(CheckpointFormat, HeaderLayoutFollowsTheFormat) {
  TempDir dir;
  const std::string path = dir / "s.safetensors";
  const Checkpoint ckpt = small_checkpoint(0.5f);
  save_checkpoint(path, ckpt);
  const std::vector<uint8_t> bytes = test::read_bytes(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  EXPECT_EQ(n % 8, 0u) << "data should start 8-byte aligned";
  ASSERT_EQ(bytes.size(), 8 + n + 4000 + 8 + 0);
  const nlohmann::json header =
      nlohmann::json::parse(std::string(bytes.begin() + 8, bytes.begin() + 8 + n));
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["data_offsets"], nlohmann::json::array({0, 4000}));
  EXPECT_EQ(header["n"]["dtype"], "I64");
  EXPECT_EQ(header["n"]["shape"], nlohmann::json::array());
  EXPECT_EQ(header["n"]["data_offsets"], nlohmann::json::array({4000, 4008}));
  EXPECT_EQ(header["empty"]["data_offsets"], nlohmann::json::array({4008, 4008}));
  EXPECT_EQ(header["__metadata__"]["note"], "small");
  float first = 0;
  std::memcpy(&first, bytes.data() + 8 + n, 4);  // little-endian host, as the format
  EXPECT_EQ(first, 0.5f);
  expect_same(ckpt, load_checkpoint(path));
}

// A file from a header text and a data section, as another writer might produce it.
std::string craft(const TempDir& dir, const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> bytes(8);
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>((header.size() >> (8 * i)) & 0xff);
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.resize(bytes.size() + data_bytes, 0);
  const std::string path = dir / "crafted.safetensors";
  test::write_bytes(path, bytes);
  return path;
}

TEST(CheckpointFormat, ReadsAFileFromAnotherWriter) {
  TempDir dir;
  // Keys out of offset order, a dtype Stoker never writes, trailing header spaces.
  const std::string path = craft(dir,
                                 R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[2,10]},)"
                                 R"("a":{"dtype":"U8","shape":[2,1],"data_offsets":[0,2]}}   )",
                                 10);
  const TensorFile f = read_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_EQ(f.tensors[0].name, "a");  // file order: by offset
  EXPECT_EQ(f.tensors[0].dtype, TensorDType::u8);
  EXPECT_EQ(f.tensors[1].name, "b");
  EXPECT_EQ(f.tensors[1].bytes.size(), 8u);
  EXPECT_TRUE(f.metadata.empty());
}

struct BadFile {
  const char* what;
  std::string header;  // raw header text; "" with data_bytes < 8 -> the whole file is that long
  size_t data_bytes;
  const char* expected;  // in the message, besides the path
};

class CheckpointFormatRejects : public testing::TestWithParam<BadFile> {};

TEST_P(CheckpointFormatRejects, NamingTheFileAndTheProblem) {
  const BadFile& bad = GetParam();
  TempDir dir;
  std::string path = craft(dir, bad.header, bad.data_bytes);
  if (std::string(bad.what) == "too short") {
    test::write_bytes(path, {1, 2, 3});
  } else if (std::string(bad.what) == "length beyond the file") {
    std::vector<uint8_t> bytes = test::read_bytes(path);
    bytes[0] = 0xff;
    test::write_bytes(path, bytes);
  }
  const std::string msg = error_of([&] { read_safetensors(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find(bad.expected), std::string::npos) << bad.what << ": " << msg;
}

const std::string kW = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckpointFormatRejects,
    testing::Values(
        BadFile{"too short", "", 0, "is 3 bytes"},
        BadFile{"length beyond the file", "{" + kW + "}", 8, "the header length says"},
        BadFile{"not json", "{\"w\":", 0, "not valid JSON"},
        BadFile{"not an object", "[1,2]", 0, "is a JSON array"},
        BadFile{"unknown dtype", R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8,
                "tensor 'w' has dtype \"F33\""},
        BadFile{"negative dim", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8,
                "tensor 'w' has shape [-2]"},
        BadFile{"fractional dim", R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", 8,
                "non-negative integer"},
        BadFile{"size mismatch", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8,
                "tensor 'w' is F32 [3] x 4 bytes = 12 bytes"},
        BadFile{"overflowing shape",
                R"({"w":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8,
                "overflows"},
        BadFile{"offsets past the end", "{" + kW + "}", 4, "tensor 'w' has data_offsets [0,8]"},
        BadFile{"begin after end", R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8,
                "0 <= begin <= end"},
        BadFile{"offsets not integers",
                R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,"8"]}})", 8,
                "data_offsets [0,\"8\"]"},
        BadFile{"missing field", R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8,
                "tensor 'w' has no 'shape' field"},
        BadFile{"unknown field", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})",
                8, "unknown field 'x'"},
        BadFile{"entry not an object", R"({"w":[1]})", 0, "tensor 'w' is a JSON array"},
        BadFile{"overlap", "{" + kW + R"(,"v":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                12, "overlaps tensor 'w'"},
        BadFile{"hole", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12,
                "bytes [0, 4) before tensor 'w' belong to no tensor"},
        BadFile{"trailing bytes", "{" + kW + "}", 12, "tensors cover only 8"},
        BadFile{"duplicate name", "{" + kW + "," + kW + "}", 8, "names 'w' twice"},
        BadFile{"metadata not strings", "{" + kW + R"(,"__metadata__":{"epoch":3}})", 8,
                "metadata 'epoch' is a JSON number"},
        BadFile{"metadata not an object", "{" + kW + R"(,"__metadata__":"x"})", 8,
                "\"__metadata__\" is a JSON string"}),
    [](const testing::TestParamInfo<BadFile>& info) {
      std::string name = info.param.what;
      for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

TEST(CheckpointFormat, MissingFileNamesThePath) {
  const std::string msg = error_of([] { read_safetensors("/nonexistent/ckpt.safetensors"); });
  EXPECT_NE(msg.find("/nonexistent/ckpt.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
}

TEST(Checkpoint, CheckNamesMissingExtraAndMisShapedKeys) {
  const Network net = resnet18(10);
  const std::string path = "ckpt.safetensors";
  Checkpoint base = init_checkpoint(net, 1);
  add_zero_momentum(base, net);
  auto problems = [&](const std::function<void(Checkpoint&)>& tamper) {
    Checkpoint c = base;
    tamper(c);
    return error_of([&] { check_checkpoint(c, net, path); });
  };
  EXPECT_EQ(problems([](Checkpoint&) {}), "(no error)");

  std::string msg = problems([](Checkpoint& c) { c.tensors.erase(c.tensors.begin() + 1); });
  EXPECT_NE(msg.find("ckpt.safetensors: does not hold resnet18 with 10 classes"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("missing 'bn1.weight' (F32 [64])"), std::string::npos) << msg;

  msg =
      problems([](Checkpoint& c) { c.tensors.push_back(make_f32_tensor("head.weight", {0}, {})); });
  EXPECT_NE(msg.find("extra 'head.weight'"), std::string::npos) << msg;

  msg = problems([&](Checkpoint& c) {
    const std::vector<float> eleven(11 * 512);
    c.tensors[static_cast<size_t>(param_index(net, "fc.weight"))] =
        make_f32_tensor("fc.weight", {11, 512}, eleven);
  });
  EXPECT_NE(msg.find("'fc.weight' is F32 [11, 512]; expected F32 [10, 512]"), std::string::npos)
      << msg;

  msg = problems([&](Checkpoint& c) {
    const float zero = 0;
    c.tensors[static_cast<size_t>(param_index(net, "bn1.num_batches_tracked"))] =
        make_f32_tensor("bn1.num_batches_tracked", {}, std::span<const float>(&zero, 1));
  });
  EXPECT_NE(msg.find("'bn1.num_batches_tracked' is F32 []; expected I64 []"), std::string::npos)
      << msg;

  msg = problems([](Checkpoint& c) {
    const float zero = 0;
    c.tensors.push_back(make_f32_tensor("optim.momentum.bn1.running_mean", {}, {&zero, 1}));
  });
  EXPECT_NE(msg.find("extra 'optim.momentum.bn1.running_mean': momentum of no trainable"),
            std::string::npos)
      << msg;
}

TEST(Checkpoint, RunStateErrorsNameTheKey) {
  Checkpoint c = small_checkpoint(0);
  std::string msg = error_of([&] { get_run_state(c, "x.safetensors"); });
  EXPECT_NE(msg.find("x.safetensors: metadata 'epoch' is missing"), std::string::npos) << msg;
  set_run_state(c, RunState{});
  c.metadata["step"] = "-1";
  msg = error_of([&] { get_run_state(c, "x.safetensors"); });
  EXPECT_NE(msg.find("metadata 'step' is '-1'; expected a non-negative integer"), std::string::npos)
      << msg;
  c.metadata["step"] = "1";
  c.metadata["config"] = "{oops";
  msg = error_of([&] { get_run_state(c, "x.safetensors"); });
  EXPECT_NE(msg.find("metadata 'config' is not a JSON document"), std::string::npos) << msg;
}

TEST(CheckpointSave, OverwritesAtomically) {
  TempDir dir;
  const std::string path = dir / "c.safetensors";
  save_checkpoint(path, small_checkpoint(1));
  save_checkpoint(path, small_checkpoint(2, 10));
  expect_same(load_checkpoint(path), small_checkpoint(2, 10));
  EXPECT_TRUE(other_files(dir.path(), "c.safetensors").empty());
}

// A full disk, simulated: a child whose file size limit is below the new checkpoint's size
// gets EFBIG from write (SIGXFSZ ignored). Its message comes back through a pipe.
TEST(CheckpointSave, FullDiskLeavesThePreviousCheckpoint) {
  TempDir dir;
  const std::string path = dir / "c.safetensors";
  const Checkpoint good = small_checkpoint(1);
  save_checkpoint(path, good);

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(2);
    const std::string msg = error_of([&] { save_checkpoint(path, small_checkpoint(2, 1 << 20)); });
    const ssize_t n = write(fds[1], msg.data(), msg.size());
    _exit(n == static_cast<ssize_t>(msg.size()) ? 0 : 3);
  }
  close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  EXPECT_NE(msg.find(path + ": cannot write the checkpoint"), std::string::npos) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  expect_same(load_checkpoint(path), good);
  EXPECT_TRUE(other_files(dir.path(), "c.safetensors").empty());
}

// Tests run as root, so a chmod-ed directory would not refuse: a missing directory and a
// parent that is a regular file do.
TEST(CheckpointSave, UnwritableDirectoryIsAClearError) {
  TempDir dir;
  const std::string path = dir / "c.safetensors";
  const Checkpoint good = small_checkpoint(1);
  save_checkpoint(path, good);

  std::string msg = error_of([&] { save_checkpoint(dir / "missing/c.safetensors", good); });
  EXPECT_NE(msg.find(dir / "missing/c.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;

  msg = error_of([&] { save_checkpoint(path + "/c.safetensors", good); });
  EXPECT_NE(msg.find(path + "/c.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Not a directory"), std::string::npos) << msg;

  // The target is a directory: everything is written, the rename fails, the temporary goes.
  std::filesystem::create_directory(dir / "d.safetensors");
  msg = error_of([&] { save_checkpoint(dir / "d.safetensors", small_checkpoint(2)); });
  EXPECT_NE(msg.find(dir / "d.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Is a directory"), std::string::npos) << msg;

  expect_same(load_checkpoint(path), good);
  std::vector<std::string> left = other_files(dir.path(), "c.safetensors");
  EXPECT_EQ(left, std::vector<std::string>{"d.safetensors"});
}

}  // namespace
}  // namespace stoker
