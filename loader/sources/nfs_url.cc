// SPDX-License-Identifier: Apache-2.0
#include "loader/sources/nfs_url.h"

#include "common/error.h"

namespace stoker {

namespace {
constexpr std::string_view kScheme = "nfs://";
}

bool is_nfs_url(std::string_view s) {
  return s.substr(0, kScheme.size()) == kScheme;
}

std::string NfsUrl::text() const {
  std::string s = std::string(kScheme) + server + path;
  if (!args.empty()) s += "?" + args;
  return s;
}

std::string NfsUrl::join(std::string_view relative) const {
  std::string s = std::string(kScheme) + server + path;
  if (s.back() != '/') s += '/';
  s += relative;
  if (!args.empty()) s += "?" + args;
  return s;
}

NfsUrl parse_nfs_url(std::string_view url) {
  if (!is_nfs_url(url)) fail("'{}' is not an nfs:// URL (expected nfs://server/path)", url);
  std::string_view rest = url.substr(kScheme.size());
  NfsUrl u;
  const size_t q = rest.find('?');
  if (q != std::string_view::npos) {
    u.args = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  const size_t slash = rest.find('/');
  u.server = rest.substr(0, slash);
  if (u.server.empty()) fail("'{}': no server (expected nfs://server/path[?args])", url);
  u.path = slash == std::string_view::npos ? "/" : rest.substr(slash);
  while (u.path.size() > 1 && u.path.back() == '/') u.path.pop_back();
  if (u.args.find('/') != std::string::npos) {
    fail("'{}': a path after the '?' arguments (they come last: nfs://server/path?args)", url);
  }
  return u;
}

}  // namespace stoker
