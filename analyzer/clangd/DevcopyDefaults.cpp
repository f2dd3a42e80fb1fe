// What devcopy-clangd changes in clangd 19, with no .clangd file needed:
//  - the devcopy checks run by default, beside clangd's own default checks,
//    unless a configuration turns them off (as in `devcopy analyze`);
//  - they count as fast: clangd 19 runs only checks listed in its generated
//    TidyFastChecks.inc unless .clangd sets FastCheckFilter: Loose, and the
//    devcopy checks, measured (devcopy analyze --enable-check-profile) at
//    20 ms or less each on a <torch/torch.h> unit that takes seconds to
//    parse, cannot be in clangd's list;
//  - every check clangd leaves out is named in the log, with the reason;
//  - a fix-it of several edits is titled in a few words (QuickFixTitles).
// clangd 19 offers no hook for either list, so the linker redirects its two
// functions here (-Wl,--wrap, see CMakeLists.txt); each answer starts from
// clangd's own (the __real_ functions).
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "clang-tidy/ClangTidyOptions.h"
#include "clang-tidy/GlobList.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

// clangd 19: TidyProviderRef provideDefaultChecks();
using TidyProviderRef =
    llvm::function_ref<void(clang::tidy::ClangTidyOptions &, llvm::StringRef)>;

// clangd's functions, and the ones the linker puts in their place (the
// symbols of clang::clangd::provideDefaultChecks() and isFastTidyCheck()).
TidyProviderRef
realDefaults() __asm__("__real__ZN5clang6clangd20provideDefaultChecksEv");
TidyProviderRef
devcopyDefaults() __asm__("__wrap__ZN5clang6clangd20provideDefaultChecksEv");
std::optional<bool> realIsFast(llvm::StringRef check) __asm__(
    "__real__ZN5clang6clangd15isFastTidyCheckEN4llvm9StringRefE");
std::optional<bool> devcopyIsFast(llvm::StringRef check) __asm__(
    "__wrap__ZN5clang6clangd15isFastTidyCheckEN4llvm9StringRefE");

namespace {

constexpr llvm::StringLiteral kDevcopy = "devcopy-";

/// One line in clangd's log format ("I[12:00:00.000] ..."), once per text:
/// clangd asks again on every edit.
void logOnce(const std::string &text) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard<std::mutex> lock(mu);
  if (!said.insert(text).second)
    return;
  std::time_t now = std::time(nullptr);
  char stamp[16];
  std::strftime(stamp, sizeof stamp, "%H:%M:%S", std::localtime(&now));
  std::string line =
      std::string("I[") + stamp + ".000] devcopy-clangd: " + text + "\n";
  // One write: clangd's own logger holds its lock, not ours.
  (void)!::write(STDERR_FILENO, line.data(), line.size());
}

// The Checks of the file clangd is building on this thread: clangd reads the
// options, then filters the check factories by speed, in one build.
thread_local std::optional<clang::tidy::GlobList> Enabled;

} // namespace

/// clangd's default checks where no configuration names any, then devcopy-*
/// first in the list: a configuration's "-*" or "-devcopy-*" still wins.
static void applyDefaults(clang::tidy::ClangTidyOptions &opts,
                          llvm::StringRef file) {
  std::string configured = opts.Checks.value_or("");
  realDefaults()(opts, file);
  opts.Checks = "devcopy-*," + opts.Checks.value_or("");
  // Quick fixes named in a few words (DevcopyCheck::fix), unless configured.
  opts.CheckOptions.try_emplace("QuickFixTitles", "true");
  Enabled.emplace(*opts.Checks);
  if (!Enabled->contains("devcopy-discarded-copy") &&
      !Enabled->contains("devcopy-copy-in-loop"))
    logOnce("no devcopy check runs for " + file.str() + ": its Checks ('" +
            configured +
            "', from .clang-tidy or .clangd) turn them off; add devcopy-* "
            "to .clangd's Diagnostics: ClangTidy: Add");
}

TidyProviderRef devcopyDefaults() { return applyDefaults; }

std::optional<bool> devcopyIsFast(llvm::StringRef check) {
  if (check.starts_with(kDevcopy))
    return true;
  std::optional<bool> fast = realIsFast(check);
  if (fast != true && Enabled && Enabled->contains(check))
    logOnce("clang-tidy check '" + check.str() + "' " +
            (fast ? "is measured slow by clangd: it runs only where .clangd "
                    "sets Diagnostics: ClangTidy: FastCheckFilter: None"
                  : "has no clangd timing: clangd skips it unless .clangd "
                    "sets Diagnostics: ClangTidy: FastCheckFilter: Loose"));
  return fast;
}
