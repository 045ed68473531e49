// SPDX-License-Identifier: Apache-2.0
// stoker peek: a PNG contact sheet of one augmented batch, each tile captioned with its
// class and sample index, so a user sees what the network will see.
#include <fmt/format.h>
#include <opencv2/imgproc.hpp>
#ifdef STOKER_HAVE_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#endif

#include <cmath>
#include <fstream>
#include <memory>

#include "augment/encode_jpeg.h"
#include "common/error.h"
#include "loader/index/index.h"
#include "loader/iterator.h"
#include "tools/commands.h"
#include "tools/options/loader_options.h"
#include "tools/options/option_checks.h"
#include "tools/output_check.h"

namespace stoker {

namespace {

struct PeekOptions {
  std::string data;
  std::string out = "peek.png";
  uint64_t epoch = 0;
  size_t batch_number = 0;
  LoaderOptions loader;
};

// PNG (or any format OpenCV writes) through imgcodecs; a build without it (the GPU
// bundle's) writes JPEG only, with libjpeg-turbo.
void write_sheet(const cv::Mat& bgr, const std::string& path) {
#ifdef STOKER_HAVE_IMGCODECS
  if (!cv::imwrite(path, bgr)) fail("peek: cannot write '{}'", path);
#else
  const bool jpeg = path.ends_with(".jpg") || path.ends_with(".jpeg");
  if (!jpeg) {
    usage_fail(
        "peek: --out '{}': this build writes JPEG only (built with STOKER_WITH_IMGCODECS=OFF); "
        "name a .jpg file",
        path);
  }
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  const std::vector<uint8_t> bytes = encode_jpeg_rgb(rgb.data, rgb.cols, rgb.rows, rgb.step, 95);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) fail("peek: cannot write '{}': {}", path, errno_text(errno));
#endif
}

void run_peek(const PeekOptions& o) {
  check_writable("--out", o.out);
  const Index index = open_index(o.data);
  LoaderConfig config = o.loader.to_config();
  config.output.dtype = DType::u8;  // the sheet shows pixels as the decoder made them
  config.output.layout = Layout::nhwc;
  Iterator it(index, config);
  it.start_epoch(o.epoch);
  const Batch* batch = nullptr;
  for (size_t i = 0; i <= o.batch_number; ++i) {
    batch = it.next();
    if (!batch) fail("peek: epoch {} has only {} batches", o.epoch, i);
  }
  const int size = config.transform.out_width(), size_h = config.transform.out_height();
  const int n = static_cast<int>(batch->size);
  const int cols = static_cast<int>(std::ceil(std::sqrt(n)));
  const int rows = (n + cols - 1) / cols;
  constexpr int kCaption = 22, kGap = 4;
  const int tile_h = size_h + kCaption;
  cv::Mat sheet(rows * (tile_h + kGap) + kGap, cols * (size + kGap) + kGap, CV_8UC3,
                cv::Scalar(32, 32, 32));
  const double font = std::clamp(size / 240.0, 0.3, 0.8);
  for (int i = 0; i < n; ++i) {
    const int x = kGap + (i % cols) * (size + kGap);
    const int y = kGap + (i / cols) * (tile_h + kGap);
    const cv::Mat rgb(size_h, size, CV_8UC3, batch->sample(static_cast<size_t>(i)));
    cv::Mat bgr;
    cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
    bgr.copyTo(sheet(cv::Rect(x, y, size, size_h)));
    const int label = batch->labels[static_cast<size_t>(i)];
    const std::string text = fmt::format("{} #{}", index.classes[static_cast<size_t>(label)],
                                         batch->indices[static_cast<size_t>(i)]);
    cv::putText(sheet, text, cv::Point(x + 2, y + size_h + kCaption - 6), cv::FONT_HERSHEY_SIMPLEX,
                font, cv::Scalar(235, 235, 235), 1, cv::LINE_AA);
  }
  write_sheet(sheet, o.out);
  fmt::print("{}: {} samples of batch {} (epoch {}), {} {}x{}, {} bad files skipped\n", o.out, n,
             o.batch_number, o.epoch, transform_name(config.transform.kind), size, size_h,
             it.bad_samples().count());
}

}  // namespace

void add_peek_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("peek", "Write a PNG contact sheet of one augmented batch");
  auto o = std::make_shared<PeekOptions>();
  cmd->add_option("data", o->data,
                  "Dataset: ImageFolder root, list file, packed shards or nfs:// URL")
      ->required();
  cmd->add_option("--out", o->out, "PNG file to write")->capture_default_str();
  cmd->add_option("--epoch", o->epoch, "Epoch to draw from")
      ->capture_default_str()
      ->check(integer_in(0));
  cmd->add_option("--batch-number", o->batch_number, "Which batch of the epoch")
      ->capture_default_str()
      ->check(integer_in(0));
  o->loader.batch = 16;
  // peek uses the serial reader and draws u8 pixels: no prefetch, output format or
  // read-only mode (which would draw black tiles).
  o->loader.add_to(*cmd, {"--prefetch", "--dtype", "--layout", "--no-decode", "--direct", "--mean",
                          "--std", "--size-schedule", "--reader", "--auto-window"});
  cmd->callback([o] { run_peek(*o); });
}

}  // namespace stoker
