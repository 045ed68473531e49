// SPDX-License-Identifier: Apache-2.0
// nfs:// URLs as libnfs reads them: nfs://server/path[?arg=value&...], where the args
// (nfsport=, mountport=, uid=, version=, ...) are libnfs's own and always come last, so a
// file below a dataset URL keeps them: nfs://h/data/cls/x.jpg?nfsport=2049. Text only: no
// libnfs here, so builds without it can still recognise and refuse an nfs:// dataset.
#pragma once

#include <string>
#include <string_view>

namespace stoker {

struct NfsUrl {
  std::string server;  // host name or address
  std::string path;    // absolute path on the server, no trailing '/' ("/" for the root)
  std::string args;    // libnfs's URL arguments without the '?', may be empty
  std::string text() const;
  // The URL of `relative` (a path below `path`, no leading '/'), with the same args.
  std::string join(std::string_view relative) const;
};

bool is_nfs_url(std::string_view s);

// Splits `url`; throws stoker::Error naming it when it is not nfs://server/path[?args].
NfsUrl parse_nfs_url(std::string_view url);

}  // namespace stoker
