// SPDX-License-Identifier: Apache-2.0
// ImageFolder order and labels as torchvision's (the same rules checked against torchvision
// itself by index_vs_torchvision.py), list files, and the errors for bad trees.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "common/error.h"
#include "loader/index/index.h"
#include "test_util.h"

namespace stoker {
namespace {

using test::TempDir;
using test::write_text;

std::vector<std::string> paths(const Index& idx) {
  std::vector<std::string> out;
  for (size_t i = 0; i < idx.size(); ++i) out.emplace_back(idx.relative_path(i));
  return out;
}

TEST(ImageFolder, TorchvisionOrderLabelsAndFilters) {
  TempDir d;
  for (const char* f : {"b/2.jpg", "b/10.jpg", "b/1.JPEG", "a/z.png", "a/sub/x.jpg",
                        "a/sub-y/q.jpg", "a/A.jpg", "B/only.webp", "a/.hidden.jpg", "a/readme.txt",
                        "a/noext", ".git/x.jpg", "a/sub/deeper/y.bmp"}) {
    write_text(d / f, "x");
  }
  std::filesystem::create_directories(d / "c_empty");
  write_text(d / "top-level-file.jpg", "x");  // not in a class directory: ignored
  const Index idx = index_image_folder(d.path());
  // Classes sorted by byte order (upper case first); hidden directories skipped.
  EXPECT_EQ(idx.classes, (std::vector<std::string>{"B", "a", "b", "c_empty"}));
  // Directories in sorted(os.walk()) order: "a/sub" < "a/sub-y" < "a/sub/deeper" ('-' < '/').
  EXPECT_EQ(paths(idx), (std::vector<std::string>{
                            "B/only.webp", "a/A.jpg", "a/z.png", "a/sub/x.jpg", "a/sub-y/q.jpg",
                            "a/sub/deeper/y.bmp", "b/1.JPEG", "b/10.jpg", "b/2.jpg"}));
  EXPECT_EQ(idx.label, (std::vector<uint32_t>{0, 1, 1, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(idx.empty_classes, (std::vector<std::string>{"c_empty"}));
  EXPECT_EQ(idx.bytes[0], 1u);
  EXPECT_EQ(idx.path(0), d.path() + "/B/only.webp");
}

TEST(ImageFolder, MissingRootNamesThePath) {
  try {
    index_image_folder("/nonexistent/stoker-root");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/stoker-root"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos);
  }
}

TEST(ImageFolder, RootWithoutClassDirectories) {
  TempDir d;
  write_text(d / "a.jpg", "x");
  try {
    index_image_folder(d.path());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no class directories"), std::string::npos) << e.what();
  }
}

// Permission bits do not stop root (as CI runs): there the indexing runs in a child process
// that has become `nobody`, so the test runs everywhere instead of skipping.
TEST(ImageFolder, UnreadableClassDirectory) {
  TempDir d;
  write_text(d / "a/x.jpg", "x");
  chmod(d.path().c_str(), 0755);  // the child must reach the root, not "a"
  chmod((d / "a").c_str(), 0);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) std::_Exit(3);
        try {
          index_image_folder(d.path());
        } catch (const Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(1);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(1), "Permission denied");
  chmod((d / "a").c_str(), 0755);
}

TEST(ImageFolder, CompactStorage) {
  TempDir d;
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 250; ++i)
      write_text(d / ("n0144076" + std::to_string(c) + "/n01440764_" + std::to_string(10000 + i) +
                      ".JPEG"),
                 "");
  const Index idx = index_image_folder(d.path());
  ASSERT_EQ(idx.size(), 1000u);
  // ImageNet-like names: ~30 bytes of path + 20 bytes of arrays per entry.
  EXPECT_LT(idx.memory_bytes() / idx.size(), 80u);
}

TEST(ListFile, PathsWithSpacesCommentsAndLabels) {
  TempDir d;
  write_text(d / "imgs/a b.jpg", "abc");
  write_text(d / "imgs/c.jpg", "x");
  write_text(d / "list.txt", "# a comment\nimgs/a b.jpg 3\n\nimgs/c.jpg\t0\r\n");
  const Index idx = index_list_file(d / "list.txt");
  ASSERT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx.relative_path(0), "imgs/a b.jpg");
  EXPECT_EQ(idx.label[0], 3u);
  EXPECT_EQ(idx.bytes[0], 3u);
  EXPECT_EQ(idx.classes.size(), 4u);
  EXPECT_EQ(idx.root, d.path());
}

TEST(ListFile, ErrorsNameFileAndLine) {
  TempDir d;
  write_text(d / "x.jpg", "x");
  write_text(d / "bad.txt", "x.jpg 1\nx.jpg one\n");
  try {
    index_list_file(d / "bad.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt:2"), std::string::npos) << e.what();
  }
  write_text(d / "missing.txt", "x.jpg 1\ngone.jpg 0\n");
  try {
    index_list_file(d / "missing.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gone.jpg"), std::string::npos) << e.what();
  }
}

// Issue 12: the list's folder was prefixed to absolute paths ('.//abs/path': No such file).
TEST(ListFile, AbsolutePathsAreTakenAsTheyAre) {
  TempDir data, lists;
  write_text(data / "cat/a.jpg", "abcd");
  write_text(lists / "rel/b.jpg", "xy");
  write_text(lists / "list.txt", data / "cat/a.jpg" + " 1\nrel/b.jpg 0\n");
  const Index idx = index_list_file(lists / "list.txt");
  ASSERT_EQ(idx.size(), 2u);
  EXPECT_EQ(idx.path(0), data / "cat/a.jpg");   // absolute: not under the list's folder
  EXPECT_EQ(idx.path(1), lists / "rel/b.jpg");  // relative: under it
  EXPECT_EQ(idx.bytes[0], 4u);
  EXPECT_EQ(idx.bytes[1], 2u);
  std::string scratch;
  EXPECT_EQ(std::string(locate_sample(idx, 0, scratch).file), data / "cat/a.jpg");
}

// A binary file given where a list is expected: named, and no raw bytes in the message.
TEST(ListFile, BinaryFileIsNotAList) {
  TempDir d;
  const std::vector<uint8_t> jpeg_head = {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F'};
  const std::vector<uint8_t> png_head = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  for (const auto& [name, bytes] : {std::pair{"x.jpg", jpeg_head}, {"y.png", png_head}}) {
    test::write_bytes(d / name, bytes);
    try {
      index_list_file(d / name);
      FAIL() << name;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("'" + d / name + "' is not a list file"), std::string::npos) << m;
      for (const char ch : m) EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << name << ": " << m;
    }
  }
  // Text with a stray byte in a malformed line is quoted as \xNN.
  write_text(d / "odd.txt", "caf\xc3\xa9.jpg\n");
  try {
    index_list_file(d / "odd.txt");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("odd.txt:1: expected 'relative/path label', found "
                                         "'caf\\xc3\\xa9.jpg'"),
              std::string::npos)
        << e.what();
  }
}

TEST(OpenIndex, DirectoryOrListFile) {
  TempDir d;
  write_text(d / "k/x.jpg", "x");
  write_text(d / "l.txt", "k/x.jpg 0\n");
  EXPECT_EQ(open_index(d.path()).size(), 1u);
  EXPECT_EQ(open_index(d / "l.txt").size(), 1u);
  EXPECT_ERROR(d / "nope", open_index(d / "nope"));
}

}  // namespace
}  // namespace stoker
