// Ranks as processes, for the multi-process tests and benchmark: spawn N
// copies of the running executable with DEVCOPY_TEST_RANK/WORLD/STORE set,
// wait for them with a deadline, and join this rank's process group through
// a FileStore: Gloo over 127.0.0.1 where Gloo's headers are found
// (DEVCOPY_TEST_GLOO; Debian's LibTorch), else StoreGroup below (pip wheels
// ship no Gloo headers). No GoogleTest here: bench/ uses it too.
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

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/version.h>

#include <cstring>

#if DEVCOPY_TEST_GLOO
#define USE_C10D_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

extern char **environ;

namespace devcopy_test {

inline int env_int(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

/// True in a rank process, false in the launcher.
inline bool in_rank() { return std::getenv("DEVCOPY_TEST_RANK") != nullptr; }
inline int rank() { return env_int("DEVCOPY_TEST_RANK", 0); }
inline int world() { return env_int("DEVCOPY_TEST_WORLD", 1); }

#if TORCH_VERSION_MAJOR >= 2
using GroupBase = c10d::Backend;
#else
using GroupBase = c10d::ProcessGroup;
#endif

/// A c10d group whose all-gather and barrier go through the store itself:
/// slow, but it needs no transport headers. Every call waits at most
/// `timeout` for the other ranks, then throws.
class StoreGroup : public GroupBase {
public:
  StoreGroup(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
             std::chrono::milliseconds timeout)
      : GroupBase(rank, size), store_(std::move(store)), timeout_(timeout) {}
  const std::string getBackendName() const override { return "store"; }

  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>> &out, std::vector<at::Tensor> &in,
      const c10d::AllgatherOptions & = c10d::AllgatherOptions()) override {
    const std::string prefix = "allgather" + std::to_string(seq_++) + "/";
    const at::Tensor src = in.at(0).contiguous().cpu();
    const auto *p = static_cast<const std::uint8_t *>(src.data_ptr());
    store_->set(prefix + std::to_string(getRank()),
                std::vector<std::uint8_t>(p, p + src.nbytes()));
    for (int r = 0; r < getSize(); ++r) {
      const std::string key = prefix + std::to_string(r);
      store_->wait({key}, timeout_);
      const std::vector<std::uint8_t> bytes = store_->get(key);
      TORCH_CHECK(bytes.size() == src.nbytes(), "rank ", r, " sent ",
                  bytes.size(), " bytes");
      at::Tensor dst = at::empty_like(src);
      std::memcpy(dst.data_ptr(), bytes.data(), bytes.size());
      out.at(0).at(r).copy_(dst);
    }
    return c10::make_intrusive<Done>();
  }

  c10::intrusive_ptr<c10d::Work>
  barrier(const c10d::BarrierOptions & = c10d::BarrierOptions()) override {
    const std::string key = "barrier" + std::to_string(seq_++);
    store_->add(key, 1);
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (store_->add(key, 0) < getSize()) {
      TORCH_CHECK(std::chrono::steady_clock::now() < deadline,
                  "barrier timed out");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return c10::make_intrusive<Done>();
  }

private:
  struct Done : c10d::Work {
    bool isCompleted() override { return true; }
    bool wait(std::chrono::milliseconds) override { return true; }
  };
  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  std::int64_t seq_ = 0;
};

#if DEVCOPY_TEST_GLOO
using TestGroup = c10d::ProcessGroupGloo;
#else
using TestGroup = StoreGroup;
#endif

/// A group of `size` ranks (Gloo over 127.0.0.1, or a StoreGroup); `timeout`
/// bounds the backend's own operations.
inline c10::intrusive_ptr<TestGroup>
make_group(const std::string &store_path, int rank, int size,
           std::chrono::milliseconds timeout) {
  auto store = c10::make_intrusive<c10d::FileStore>(store_path, size);
  store->setTimeout(std::chrono::seconds(20));
#if DEVCOPY_TEST_GLOO
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(
      c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size,
                                                     options);
#else
  return c10::make_intrusive<StoreGroup>(store, rank, size, timeout);
#endif
}

/// This rank's group, in a process spawn_ranks() started.
inline c10::intrusive_ptr<TestGroup> join(std::chrono::milliseconds timeout) {
  return make_group(std::getenv("DEVCOPY_TEST_STORE"), rank(), world(),
                    timeout);
}

/// A fresh directory for a FileStore; removed by the destructor.
class StoreDir {
public:
  StoreDir() {
    char tmpl[] = "/tmp/devcopy-ranks-XXXXXX";
    if (mkdtemp(tmpl) != nullptr)
      dir_ = tmpl;
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
inline std::vector<int> spawn_ranks(int n, const std::vector<std::string> &args,
                                    const std::string &store,
                                    std::chrono::seconds limit,
                                    bool *overran = nullptr) {
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> env;
    for (char **e = environ; *e != nullptr; ++e)
      env.emplace_back(*e);
    env.push_back("DEVCOPY_TEST_RANK=" + std::to_string(r));
    env.push_back("DEVCOPY_TEST_WORLD=" + std::to_string(n));
    env.push_back("DEVCOPY_TEST_STORE=" + store);
    std::vector<std::string> argv_s{"/proc/self/exe"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char *> envp, argv;
    for (std::string &s : env)
      envp.push_back(s.data());
    for (std::string &s : argv_s)
      argv.push_back(s.data());
    envp.push_back(nullptr);
    argv.push_back(nullptr);
    pid_t pid = -1;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(),
                    envp.data()) != 0)
      pid = -1;
    pids.push_back(pid);
  }
  std::vector<int> codes(n, -SIGKILL);
  std::vector<bool> done(n, false);
  for (int r = 0; r < n; ++r)
    done[r] = pids[r] < 0;
  if (overran != nullptr)
    *overran = false;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    int left = 0;
    for (int r = 0; r < n; ++r) {
      int status = 0;
      if (done[r])
        continue;
      if (waitpid(pids[r], &status, WNOHANG) != pids[r]) {
        ++left;
        continue;
      }
      done[r] = true;
      codes[r] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    }
    if (left == 0)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < n; ++r)
        if (!done[r]) {
          kill(pids[r], SIGKILL);
          waitpid(pids[r], nullptr, 0);
        }
      if (overran != nullptr)
        *overran = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return codes;
}

} // namespace devcopy_test
