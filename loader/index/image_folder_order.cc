// SPDX-License-Identifier: Apache-2.0
#include "loader/index/image_folder_order.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace stoker::image_folder {

uint32_t push_name(std::vector<char>& pool, const char* name) {
  const auto off = static_cast<uint32_t>(pool.size());
  pool.insert(pool.end(), name, name + std::strlen(name) + 1);
  return off;
}

void sort_names(const std::vector<char>& pool, std::vector<uint32_t>& offs,
                std::vector<uint64_t>* sizes) {
  std::vector<uint32_t> order(offs.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::strcmp(pool.data() + offs[a], pool.data() + offs[b]) < 0;
  });
  std::vector<uint32_t> o2(offs.size());
  std::vector<uint64_t> s2(sizes ? sizes->size() : 0);
  for (size_t i = 0; i < order.size(); ++i) {
    o2[i] = offs[order[i]];
    if (sizes) s2[i] = (*sizes)[order[i]];
  }
  offs.swap(o2);
  if (sizes) sizes->swap(s2);
}

void order_class(std::vector<ListedDir>& dirs, ClassFiles& out) {
  std::sort(dirs.begin(), dirs.end(),
            [](const ListedDir& a, const ListedDir& b) { return a.rel < b.rel; });
  for (ListedDir& d : dirs) {
    sort_names(d.listing.pool, d.listing.files, &d.listing.file_size);
    for (size_t i = 0; i < d.listing.files.size(); ++i) {
      out.paths.insert(out.paths.end(), d.rel.begin(), d.rel.end());
      out.paths.push_back('/');
      const char* name = d.listing.pool.data() + d.listing.files[i];
      out.paths.insert(out.paths.end(), name, name + std::strlen(name) + 1);
      out.sizes.push_back(d.listing.file_size[i]);
    }
  }
}

Index assemble(std::string root, std::vector<std::string> classes,
               std::vector<ClassFiles>& per_class) {
  Index index;
  index.root = std::move(root);
  index.classes = std::move(classes);
  size_t n = 0, chars = 0;
  for (const auto& c : per_class) {
    n += c.sizes.size();
    chars += c.paths.size();
  }
  index.names.reserve(chars);
  index.name_offset.reserve(n);
  index.bytes.reserve(n);
  index.label.reserve(n);
  for (size_t c = 0; c < per_class.size(); ++c) {
    const ClassFiles& cf = per_class[c];
    if (cf.sizes.empty()) index.empty_classes.push_back(index.classes[c]);
    const char* p = cf.paths.data();
    for (uint64_t size : cf.sizes) {
      const std::string_view rel(p);
      index.add(rel, size, static_cast<uint32_t>(c));
      p += rel.size() + 1;
    }
    per_class[c] = {};
  }
  return index;
}

}  // namespace stoker::image_folder
