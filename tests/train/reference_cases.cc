// SPDX-License-Identifier: Apache-2.0
// Test driver for reference_vs_torch.py: runs one reference layer forward and backward on
// tensors the script wrote and writes the results back for it to compare with torch's.
//   reference_cases LAYER IN OUT [KEY=VALUE...]
// IN and OUT are sequences of named tensors, little-endian: i32 name length, name, i32 rank,
// i64 dims[rank], f32 values. Integer inputs (class targets) travel as exact floats.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "train/reference/activation.h"
#include "train/reference/batchnorm.h"
#include "train/reference/conv.h"
#include "train/reference/linear.h"
#include "train/reference/loss.h"
#include "train/reference/pool.h"

namespace {

using namespace stoker::ref;

struct Tensor {
  std::vector<int64_t> dims;
  std::vector<float> data;
  int64_t dim(size_t i) const { return dims.at(i); }
  float* p() { return data.data(); }
};
using Tensors = std::map<std::string, Tensor>;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "reference_cases: %s\n", what.c_str());
  std::exit(1);
}

template <class T>
T get(std::ifstream& in) {
  T v{};
  in.read(reinterpret_cast<char*>(&v), sizeof v);
  return v;
}

template <class T>
void put(std::ofstream& out, T v) {
  out.write(reinterpret_cast<const char*>(&v), sizeof v);
}

Tensors read_tensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) die("cannot open " + path);
  Tensors t;
  while (in.peek() != EOF) {
    std::string name(size_t(get<int32_t>(in)), '\0');
    in.read(name.data(), std::streamsize(name.size()));
    Tensor& x = t[name];
    x.dims.resize(size_t(get<int32_t>(in)));
    int64_t count = 1;
    for (int64_t& d : x.dims) count *= d = get<int64_t>(in);
    x.data.resize(size_t(count));
    in.read(reinterpret_cast<char*>(x.data.data()), std::streamsize(count * sizeof(float)));
    if (!in) die("truncated tensor " + name + " in " + path);
  }
  return t;
}

void write_tensors(const std::string& path, const Tensors& t) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& [name, x] : t) {
    put(out, int32_t(name.size()));
    out.write(name.data(), std::streamsize(name.size()));
    put(out, int32_t(x.dims.size()));
    for (int64_t d : x.dims) put(out, d);
    out.write(reinterpret_cast<const char*>(x.data.data()),
              std::streamsize(x.data.size() * sizeof(float)));
  }
  if (!out) die("cannot write " + path);
}

Tensor zeros(std::vector<int64_t> dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return Tensor{std::move(dims), std::vector<float>(size_t(count))};
}

Tensor& need(Tensors& t, const std::string& name) {
  auto it = t.find(name);
  if (it == t.end()) die("input tensor '" + name + "' is missing");
  return it->second;
}

// Each case reads its inputs by name and returns its outputs by name.
Tensors run_conv(Tensors& in, const std::map<std::string, double>& arg) {
  Tensor &x = need(in, "x"), &w = need(in, "w"), &dout = need(in, "dout");
  const ConvShape s{.n = x.dim(0),
                    .c = x.dim(1),
                    .h = x.dim(2),
                    .w = x.dim(3),
                    .k = w.dim(0),
                    .kh = w.dim(2),
                    .kw = w.dim(3),
                    .stride = int64_t(arg.at("stride")),
                    .pad = int64_t(arg.at("pad"))};
  Tensors out{
      {"out", zeros({s.n, s.k, s.oh(), s.ow()})}, {"dx", zeros(x.dims)}, {"dw", zeros(w.dims)}};
  conv2d_forward(out["out"].p(), x.p(), w.p(), s);
  conv2d_backward(out["dx"].p(), out["dw"].p(), dout.p(), x.p(), w.p(), s);
  return out;
}

Tensors run_batchnorm(Tensors& in, const std::map<std::string, double>& arg) {
  Tensor &x = need(in, "x"), &gamma = need(in, "gamma"), &beta = need(in, "beta");
  Tensor &rm = need(in, "running_mean"), &rv = need(in, "running_var"), &dout = need(in, "dout");
  const BatchNormShape s{.n = x.dim(0),
                         .c = x.dim(1),
                         .h = x.dim(2),
                         .w = x.dim(3),
                         .eps = float(arg.at("eps")),
                         .momentum = float(arg.at("momentum"))};
  Tensors out{{"out", zeros(x.dims)},   {"out_infer", zeros(x.dims)}, {"dx", zeros(x.dims)},
              {"dgamma", zeros({s.c})}, {"dbeta", zeros({s.c})},      {"running_mean", rm},
              {"running_var", rv}};
  // Inference first, with the running statistics as given; training then updates them.
  batchnorm_forward_infer(out["out_infer"].p(), x.p(), gamma.p(), beta.p(), rm.p(), rv.p(), s);
  std::vector<float> mean(size_t(s.c)), rstd(size_t(s.c));
  batchnorm_forward_train(out["out"].p(), mean.data(), rstd.data(), out["running_mean"].p(),
                          out["running_var"].p(), x.p(), gamma.p(), beta.p(), s);
  batchnorm_backward(out["dx"].p(), out["dgamma"].p(), out["dbeta"].p(), dout.p(), x.p(), gamma.p(),
                     mean.data(), rstd.data(), s);
  return out;
}

Tensors run_relu(Tensors& in, const std::map<std::string, double>&) {
  Tensor &x = need(in, "x"), &dout = need(in, "dout");
  const int64_t n = int64_t(x.data.size());
  Tensors out{{"out", zeros(x.dims)}, {"dx", zeros(x.dims)}};
  relu_forward(out["out"].p(), x.p(), n);
  relu_backward(out["dx"].p(), dout.p(), out["out"].p(), n);
  return out;
}

Tensors run_add(Tensors& in, const std::map<std::string, double>&) {
  Tensor &a = need(in, "a"), &b = need(in, "b"), &dout = need(in, "dout");
  const int64_t n = int64_t(a.data.size());
  Tensors out{{"out", zeros(a.dims)}, {"da", zeros(a.dims)}, {"db", zeros(b.dims)}};
  add_forward(out["out"].p(), a.p(), b.p(), n);
  add_backward(out["da"].p(), out["db"].p(), dout.p(), n);
  return out;
}

Tensors run_maxpool(Tensors& in, const std::map<std::string, double>& arg) {
  Tensor &x = need(in, "x"), &dout = need(in, "dout");
  const PoolShape s{.n = x.dim(0),
                    .c = x.dim(1),
                    .h = x.dim(2),
                    .w = x.dim(3),
                    .k = int64_t(arg.at("k")),
                    .stride = int64_t(arg.at("stride")),
                    .pad = int64_t(arg.at("pad"))};
  Tensors out{{"out", zeros({s.n, s.c, s.oh(), s.ow()})}, {"dx", zeros(x.dims)}};
  std::vector<int64_t> argmax(out["out"].data.size());
  maxpool2d_forward(out["out"].p(), argmax.data(), x.p(), s);
  maxpool2d_backward(out["dx"].p(), dout.p(), argmax.data(), s);
  return out;
}

Tensors run_avgpool(Tensors& in, const std::map<std::string, double>&) {
  Tensor &x = need(in, "x"), &dout = need(in, "dout");
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  Tensors out{{"out", zeros({n, c})}, {"dx", zeros(x.dims)}};
  global_avgpool_forward(out["out"].p(), x.p(), n, c, h, w);
  global_avgpool_backward(out["dx"].p(), dout.p(), n, c, h, w);
  return out;
}

Tensors run_linear(Tensors& in, const std::map<std::string, double>&) {
  Tensor &x = need(in, "x"), &w = need(in, "w"), &b = need(in, "b"), &dout = need(in, "dout");
  const LinearShape s{.n = x.dim(0), .in = x.dim(1), .out = w.dim(0)};
  Tensors out{{"out", zeros({s.n, s.out})},
              {"dx", zeros(x.dims)},
              {"dw", zeros(w.dims)},
              {"db", zeros(b.dims)}};
  linear_forward(out["out"].p(), x.p(), w.p(), b.p(), s);
  linear_backward(out["dx"].p(), out["dw"].p(), out["db"].p(), dout.p(), x.p(), w.p(), s);
  return out;
}

Tensors run_cross_entropy(Tensors& in, const std::map<std::string, double>& arg) {
  Tensor &logits = need(in, "logits"), &target = need(in, "target");
  const CrossEntropyShape s{
      .n = logits.dim(0), .k = logits.dim(1), .label_smoothing = float(arg.at("label_smoothing"))};
  std::vector<int32_t> targets(target.data.begin(), target.data.end());
  std::vector<float> probs(logits.data.size());
  Tensors out{{"loss", zeros({1})}, {"dlogits", zeros(logits.dims)}};
  out["loss"].data[0] = cross_entropy_forward(probs.data(), logits.p(), targets.data(), s);
  cross_entropy_backward(out["dlogits"].p(), probs.data(), targets.data(), s);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) die("usage: reference_cases LAYER IN OUT [KEY=VALUE...]");
  std::map<std::string, double> arg;
  for (int i = 4; i < argc; ++i) {
    const std::string kv = argv[i];
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) die("argument '" + kv + "' is not KEY=VALUE");
    arg[kv.substr(0, eq)] = std::strtod(kv.c_str() + eq + 1, nullptr);
  }
  using Case = Tensors (*)(Tensors&, const std::map<std::string, double>&);
  const std::map<std::string, Case> cases = {
      {"conv", run_conv},       {"batchnorm", run_batchnorm},
      {"relu", run_relu},       {"add", run_add},
      {"maxpool", run_maxpool}, {"avgpool", run_avgpool},
      {"linear", run_linear},   {"cross_entropy", run_cross_entropy}};
  auto it = cases.find(argv[1]);
  if (it == cases.end()) die(std::string("unknown layer '") + argv[1] + "'");
  Tensors in = read_tensors(argv[2]);
  write_tensors(argv[3], it->second(in, arg));
  return 0;
}
