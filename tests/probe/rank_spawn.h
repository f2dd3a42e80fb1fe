// Ranks as processes, for the multi-process tests and benchmark: spawn N
// copies of the running executable with DEVCOPY_TEST_RANK/WORLD/STORE set,
// wait for them with a deadline, and join this rank's Gloo process group
// (FileStore, 127.0.0.1). No GoogleTest here: bench/ uses it too.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#define USE_C10D_GLOO 1
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

extern char** environ;

namespace devcopy_test {

inline int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

/// True in a rank process, false in the launcher.
inline bool in_rank() { return std::getenv("DEVCOPY_TEST_RANK") != nullptr; }
inline int rank() { return env_int("DEVCOPY_TEST_RANK", 0); }
inline int world() { return env_int("DEVCOPY_TEST_WORLD", 1); }

/// A Gloo group of `size` ranks over 127.0.0.1; `timeout` bounds the
/// backend's own operations.
inline c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo_group(const std::string& store_path, int rank,
                                                             int size, std::chrono::milliseconds timeout) {
  auto store = c10::make_intrusive<c10d::FileStore>(store_path, size);
  store->setTimeout(std::chrono::seconds(20));
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

/// This rank's group, in a process spawn_ranks() started.
inline c10::intrusive_ptr<c10d::ProcessGroupGloo> join(std::chrono::milliseconds timeout) {
  return gloo_group(std::getenv("DEVCOPY_TEST_STORE"), rank(), world(), timeout);
}

/// A fresh directory for a FileStore; removed by the destructor.
class StoreDir {
 public:
  StoreDir() {
    char tmpl[] = "/tmp/devcopy-ranks-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~StoreDir() {
    std::remove(path().c_str());
    rmdir(dir_.c_str());
  }
  std::string path() const { return dir_ + "/store"; }

 private:
  std::string dir_;
};

/// Runs this executable `n` times with `args` as ranks 0..n-1 of a group
/// whose store is at `store`; returns each one's exit status (-signal when
/// killed). Ranks still running after `limit` are killed; `*overran` says so.
inline std::vector<int> spawn_ranks(int n, const std::vector<std::string>& args, const std::string& store,
                                    std::chrono::seconds limit, bool* overran = nullptr) {
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back("DEVCOPY_TEST_RANK=" + std::to_string(r));
    env.push_back("DEVCOPY_TEST_WORLD=" + std::to_string(n));
    env.push_back("DEVCOPY_TEST_STORE=" + store);
    std::vector<std::string> argv_s{"/proc/self/exe"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> envp, argv;
    for (std::string& s : env) envp.push_back(s.data());
    for (std::string& s : argv_s) argv.push_back(s.data());
    envp.push_back(nullptr);
    argv.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()) != 0) pid = -1;
    pids.push_back(pid);
  }
  std::vector<int> codes(n, -SIGKILL);
  std::vector<bool> done(n, false);
  for (int r = 0; r < n; ++r) done[r] = pids[r] < 0;
  if (overran != nullptr) *overran = false;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int left = 0;
    for (int r = 0; r < n; ++r) {
      int status = 0;
      if (done[r]) continue;
      if (waitpid(pids[r], &status, WNOHANG) != pids[r]) {
        ++left;
        continue;
      }
      done[r] = true;
      codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < n; ++r)
        if (!done[r]) {
          kill(pids[r], SIGKILL);
          waitpid(pids[r], nullptr, 0);
        }
      if (overran != nullptr) *overran = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return codes;
}

}  // namespace devcopy_test
