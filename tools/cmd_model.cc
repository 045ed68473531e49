// SPDX-License-Identifier: Apache-2.0
// stoker model ARCH: the network description as a layer table (kind, window, channels,
// output shape, parameters and MACs per layer, totals and trained-image FLOPs), or with
// --params one `name dim0,dim1,...` line per state_dict entry; --json writes it all. It
// describes a network; it allocates no tensor and runs nothing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "models/flops.h"
#include "models/resnet.h"
#include "models/shapes.h"
#include "tools/commands.h"
#include "tools/json_document.h"
#include "tools/options/command_options.h"
#include "tools/options/option_checks.h"
#include "tools/output_check.h"

namespace stoker {

namespace {

struct ModelOptions {
  std::string arch;
  int classes = 1000;
  std::string input = "224";
  bool zero_init_residual = false;
  bool params = false;
  std::string json;
};

// "224" -> 224x224, "224x320" -> height 224, width 320.
std::pair<int64_t, int64_t> parse_input(const std::string& text) {
  const size_t x = text.find('x');
  const std::string hs = text.substr(0, x);
  const std::string ws = x == std::string::npos ? hs : text.substr(x + 1);
  auto number = [&](const std::string& s) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 1 || v > 65536) {
      fail("--input '{}': expected a side S or HEIGHTxWIDTH in pixels, e.g. 224 or 224x320", text);
    }
    return v;
  };
  return {number(hs), number(ws)};
}

std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    const size_t left = digits.size() - i;  // digits from here to the end
    if (i > 0 && digits[i - 1] != '-' && left % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string dims(const std::vector<int64_t>& shape) {
  return fmt::format("{}", fmt::join(shape, ","));
}

std::string window(const Layer& l) {
  if (l.kind != LayerKind::conv && l.kind != LayerKind::maxpool) return "";
  return fmt::format("{}x{}/{} p{}", l.kernel, l.kernel, l.stride, l.padding);
}

std::string channels(const Layer& l) {
  switch (l.kind) {
    case LayerKind::conv:
    case LayerKind::fc:
      return fmt::format("{}->{}", l.in_channels, l.out_channels);
    case LayerKind::batchnorm:
      return std::to_string(l.in_channels);
    default:
      return "";
  }
}

std::string reads(const Network& net, const Layer& l) {
  std::string s;
  for (const int t : l.inputs) s += (s.empty() ? "" : ",") + net.tensors[t];
  return s;
}

nlohmann::json to_json(const Network& net, const ModelOptions& o,
                       const std::vector<ActShape>& shapes,
                       const std::vector<int64_t>& layer_params, const ForwardCost& cost) {
  auto shape_json = [](const ActShape& s) { return nlohmann::json::array({s.c, s.h, s.w}); };
  nlohmann::json layers = nlohmann::json::array();
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    nlohmann::json j = {{"name", l.name},
                        {"kind", kind_name(l.kind)},
                        {"reads", nlohmann::json::array()},
                        {"writes", net.tensors[l.output]},
                        {"shape", shape_json(shapes[l.output])},
                        {"parameters", layer_params[i]},
                        {"macs", layer_macs(l, shapes)}};
    for (const int t : l.inputs) j["reads"].push_back(net.tensors[t]);
    if (l.kind == LayerKind::conv || l.kind == LayerKind::fc || l.kind == LayerKind::batchnorm) {
      j["in_channels"] = l.in_channels;
      j["out_channels"] = l.out_channels;
    }
    if (l.kind == LayerKind::conv || l.kind == LayerKind::maxpool) {
      j["kernel"] = l.kernel;
      j["stride"] = l.stride;
      j["padding"] = l.padding;
    }
    if (l.kind == LayerKind::conv) j["groups"] = l.groups;
    if (l.kind == LayerKind::conv || l.kind == LayerKind::fc) j["bias"] = l.bias;
    if (l.kind == LayerKind::batchnorm) {
      j["eps"] = l.eps;
      j["momentum"] = l.momentum;
    }
    layers.push_back(std::move(j));
  }
  nlohmann::json params = nlohmann::json::array();
  for (const Param& p : net.params) {
    params.push_back({{"name", p.name},
                      {"shape", p.shape},
                      {"dtype", p.dtype == ParamType::f32 ? "float32" : "int64"},
                      {"trainable", p.trainable},
                      {"init", {{"kind", init_name(p.init.kind)}, {"scale", p.init.scale}}}});
  }
  return {{"tool", "stoker model"},
          {"version", STOKER_VERSION},
          {"arch", net.name},
          {"classes", net.num_classes},
          {"zero_init_residual", o.zero_init_residual},
          {"input", shape_json(shapes[0])},
          {"layers", layers},
          {"params", params},
          {"totals",
           {{"parameters", trainable_count(net)},
            {"buffers", buffer_count(net)},
            {"forward_macs", cost.macs},
            {"trained_image_flops", trained_image_flops(cost)},
            {"activations", cost.activations}}}};
}

void print_table(const Network& net, const std::vector<ActShape>& shapes,
                 const std::vector<int64_t>& layer_params, const ForwardCost& cost) {
  fmt::print(
      "# stoker {} model {}: {} classes, input {} per image (N, the batch, is chosen at "
      "run time)\n",
      STOKER_VERSION, net.name, net.num_classes, to_string(shapes[0]));
  fmt::print("{:>4} {:<22} {:<9} {:<9} {:<10} {:<14} {:>10} {:>9}  {}\n", "#", "layer", "kind",
             "window", "channels", "output", "params", "MMAC", "reads");
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    fmt::print("{:>4} {:<22} {:<9} {:<9} {:<10} {:<14} {:>10} {:>9.2f}  {}\n", i, l.name,
               kind_name(l.kind), window(l), channels(l), to_string(shapes[l.output]),
               layer_params[i], layer_macs(l, shapes) / 1e6, reads(net, l));
  }
  size_t trainable_tensors = 0;
  for (const Param& p : net.params) trainable_tensors += p.trainable ? 1 : 0;
  fmt::print(
      "# parameters: {} trainable in {} tensors; buffers: {} elements in {} tensors "
      "(state_dict: {} entries)\n",
      with_commas(trainable_count(net)), trainable_tensors, with_commas(buffer_count(net)),
      net.params.size() - trainable_tensors, net.params.size());
  fmt::print("# forward: {} multiply-adds per image ({:.3f} GMAC; conv and fc only)\n",
             with_commas(cost.macs), cost.macs / 1e9);
  fmt::print(
      "# trained image: {:.2f} GFLOP = 2 FLOP per MAC x 3 passes (forward, input "
      "gradient, weight gradient)\n",
      trained_image_flops(cost) / 1e9);
  fmt::print("# activations: {} elements per image, all tensors written by the forward pass\n",
             with_commas(cost.activations));
}

void run_model(const ModelOptions& o) {
  check_writable("--json", o.json);
  ResNetConfig config = parse_resnet_arch(o.arch);
  config.num_classes = o.classes;
  config.zero_init_residual = o.zero_init_residual;
  const Network net = build_resnet(config);
  const auto [height, width] = parse_input(o.input);
  const std::vector<ActShape> shapes = infer_shapes(net, height, width);
  const ForwardCost cost = forward_cost(net, shapes);
  std::vector<int64_t> layer_params(net.layers.size(), 0);
  for (const Param& p : net.params) layer_params[p.layer] += p.trainable ? numel(p) : 0;

  if (o.params) {
    for (const Param& p : net.params) {
      fmt::print("{}{}{}\n", p.name, p.shape.empty() ? "" : " ", dims(p.shape));
    }
  } else {
    print_table(net, shapes, layer_params, cost);
  }
  if (!o.json.empty()) {
    std::ofstream out(o.json);
    out << context_and_result(to_json(net, o, shapes, layer_params, cost),
                              {"tool", "version", "arch", "classes", "zero_init_residual", "input"})
               .dump(2)
        << "\n";
    if (!out) fail("--json {}: cannot write: {}", o.json, errno_text(errno));
  }
}

}  // namespace

void add_model_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "model", "Describe a network: layers, output shapes, parameters, FLOPs per image");
  auto o = std::make_shared<ModelOptions>();
  cmd->add_option("arch", o->arch, "resnet18, resnet34, resnet50, resnet101 or resnet152")
      ->required()
      ->check(parsed_by([](const std::string& s) { parse_resnet_arch(s); }, "ARCH"));
  cmd->add_option("--classes", o->classes, "Number of classes (the fc layer's outputs)")
      ->capture_default_str()
      ->check(integer_in(1, 1 << 20));
  cmd->add_option("--input", o->input, "Input image size: S (S x S) or HEIGHTxWIDTH")
      ->capture_default_str()
      ->check(parsed_by([](const std::string& s) { parse_input(s); }, "SIZE"));
  cmd->add_flag("--zero-init-residual", o->zero_init_residual,
                "Last BN of each residual branch starts with weight 0 (torchvision's option)");
  cmd->add_flag("--params", o->params,
                "Instead of the table, list the state_dict: one 'name dim0,dim1,...' line per "
                "entry, in torchvision's order (a scalar has no dims)");
  add_command_option(*cmd, "--json", o->json,
                     {"Write layers, parameters and totals as one JSON document"});
  cmd->callback([o] { run_model(*o); });
}

}  // namespace stoker
