// SPDX-License-Identifier: Apache-2.0
#include "tools/study/study_storage.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/system_info.h"
#include "tools/pack/pack_shards.h"

namespace stoker {

namespace {

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `command` through the shell, stdout and stderr together into `out`; the exit status
// (or 128 + signal).
int run_shell(const std::string& command, std::string& out) {
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) fail("cannot run {}: {}", command, errno_text(errno));
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::string nfs_serve_script() {
  if (const char* env = std::getenv("STOKER_NFS_SERVE"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  // Where it is missing, starting a server fails with the shell's "not found" for this path,
  // and that cell's error says so.
  return (self.parent_path() / "nfs_serve.sh").string();
}

NfsExports::NfsExports(std::string existing_url, std::string state_dir)
    : existing_(std::move(existing_url)), state_dir_(std::move(state_dir)) {}

NfsExports::~NfsExports() {
  stop_all();
}

std::string NfsExports::url_of(const std::string& dir, const std::string& name,
                               const std::string& link) {
  if (!existing_.empty()) {
    const size_t q = existing_.find('?');
    std::string base = existing_.substr(0, q);
    while (!base.empty() && base.back() == '/') base.pop_back();
    return base + "/" + name + (q == std::string::npos ? "" : existing_.substr(q));
  }
  const std::string key = link.empty() ? dir : dir + "@" + link;
  if (auto it = urls_.find(key); it != urls_.end()) return it->second;
  if (auto it = failed_.find(key); it != failed_.end()) fail("{}", it->second);
  const std::string abs = std::filesystem::absolute(dir).lexically_normal().string();
  const std::string state = fmt::format("{}/nfs-{}", state_dir_, started_.size() + failed_.size());
  std::string out;
  const std::string script = nfs_serve_script();
  const std::string netns = link.empty() ? "" : " --netns --link " + quote(link);
  const int rc = run_shell(fmt::format("{} start {} --port auto --mount-port auto --state {}{}",
                                       quote(script), quote(abs), quote(state), netns),
                           out);
  const size_t at = out.rfind("nfs://");
  if (rc != 0 || at == std::string::npos) {
    const std::string why = fmt::format("no NFS server for {}{}: {} start exited {}{}: {}", abs,
                                        link.empty() ? "" : " behind a " + link + " link", script,
                                        rc, rc == 77 ? " (cannot run here)" : "", trim(out));
    failed_[key] = why;
    fail("{}", why);
  }
  started_[key] = state;
  // The URL is a line of its own (--netns may say more after it).
  return urls_[key] = trim(out.substr(at, out.find('\n', at) - at));
}

nlohmann::json NfsExports::link_of(const std::string& dir, const std::string& link) const {
  if (link.empty()) return nullptr;
  const auto it = started_.find(dir + "@" + link);
  if (it == started_.end()) return nullptr;
  std::ifstream in(it->second + "/link.json");
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

double NfsExports::server_cpu_seconds(const std::string& dir, const std::string& link) const {
  const auto it = started_.find(link.empty() ? dir : dir + "@" + link);
  if (it == started_.end()) return -1;
  std::ifstream pid_file(it->second + "/ganesha.pid");
  long pid = 0;
  if (!(pid_file >> pid) || pid <= 0) return -1;
  return pid_cpu_seconds(int(pid));
}

void NfsExports::stop_all() {
  for (const auto& [dir, state] : started_) {
    std::string out;
    const int rc =
        run_shell(fmt::format("{} stop --state {}", quote(nfs_serve_script()), quote(state)), out);
    if (rc != 0)
      std::fprintf(stderr, "stoker: warning: stopping the NFS server of %s: %s\n", dir.c_str(),
                   trim(out).c_str());
  }
  started_.clear();
  urls_.clear();
}

std::string pack_study_shards(const std::string& dataset, const std::string& dir) {
  PackConfig c;
  c.data = dataset;
  c.out = dir;
  c.shard_size = 64'000'000;
  c.force = true;
  c.progress = false;
  pack_shards(c);
  return dir;
}

}  // namespace stoker
