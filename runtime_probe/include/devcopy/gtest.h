// GoogleTest assertions over devcopy reports. Each one inspects (or takes) a
// report and fails with the full text report when findings of its rule are
// present:
//
//   EXPECT_NO_DUPLICATE_STORAGE(model);
//   ASSERT_NO_UNREACHABLE_ALLOCATION(model,
//   devcopy::InspectOptions().root("opt", opt));
//   EXPECT_NO_PROBE_FINDINGS(model);           // any rule
//   EXPECT_CLEAN_REPORT(report);               // a Report you already have
//   EXPECT_NO_DISCARDED_COPIES(step(model, batch));  // runs it under a
//   CopyObserver
//
// DEVCOPY_PROBE is honoured as by check(), with fail as the default under
// test: off passes without inspecting, warn prints the report and passes.
// A failure starts with one `file:line: kind: message` line per finding whose
// location is known (as GoogleTest prints its own), then the full report.
// DEVCOPY_REPORT_DIR=<folder>: each test's reports (all its assertions,
// merged) are written there as <Suite>.<Test>.json, for CI to keep.
// Link devcopy::gtest.
#pragma once

#include <gtest/gtest.h>

#include <devcopy/rules_catalog.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>

#include "devcopy/copy_observer.h"
#include "devcopy/mode.h"
#include "devcopy/probe.h"

namespace devcopy::testing {

/// The mode assertions use: DEVCOPY_PROBE, or fail when unset.
inline Mode assertion_mode() { return mode_from_env(Mode::fail); }

/// With DEVCOPY_REPORT_DIR set, adds `report` to the running test's JSON
/// file there. Returns an empty string, or a one-line error.
inline std::string save_for_test(const Report &report) {
  const char *dir = std::getenv("DEVCOPY_REPORT_DIR");
  if (dir == nullptr || *dir == '\0')
    return {};
  const ::testing::TestInfo *info =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name =
      info ? std::string(info->test_suite_name()) + "." + info->name()
           : "no-test";
  for (char &c : name)
    if (c == '/' || c == '\\' || c == ' ')
      c = '_';
  // One file per test, holding every assertion of its latest run: a
  // listener (added on first use) starts each test afresh.
  struct Runs : ::testing::EmptyTestEventListener {
    std::mutex mu;
    std::map<std::string, Report> reports;
    void OnTestStart(const ::testing::TestInfo &) override {
      std::lock_guard<std::mutex> lock(mu);
      reports.clear();
    }
  };
  static Runs *runs = [] {
    auto *r = new Runs; // owned by GoogleTest's listener list
    ::testing::UnitTest::GetInstance()->listeners().Append(r);
    return r;
  }();
  std::lock_guard<std::mutex> lock(runs->mu);
  Report &merged = runs->reports[name];
  merged.merge(report);
  return write_json(merged, std::string(dir) + "/" + name + ".json");
}

/// The verdict every devcopy assertion gives on a finished report: findings
/// of `kind` (of any kind when empty) fail in fail mode and are printed in
/// warn mode. Reusable by other report producers (CopyObserver).
inline ::testing::AssertionResult verdict(const char *expr,
                                          std::string_view kind,
                                          const Report &report, Mode mode) {
  if (mode != Mode::off) {
    const std::string error = save_for_test(report);
    if (!error.empty())
      return ::testing::AssertionFailure() << error;
  }
  const Report relevant = only(report, kind);
  if (mode == Mode::off || !relevant.has_findings())
    return ::testing::AssertionSuccess();
  std::ostringstream text;
  for (const Finding &f : relevant.findings()) {
    if (!f.location.known())
      continue;
    text << (f.location.file.empty() ? std::string("<no debug info>")
                                     : f.location.file);
    if (f.location.line > 0)
      text << ':' << f.location.line;
    text << ": " << f.kind << ": " << f.message << '\n';
  }
  text << relevant;
  if (mode == Mode::warn) {
    std::cerr << text.str();
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << expr << " has " << relevant.findings().size() << " "
         << (kind.empty() ? std::string_view("devcopy") : kind)
         << " finding(s):\n"
         << text.str();
}

template <class M>
::testing::AssertionResult no_findings(const char *expr, std::string_view kind,
                                       const M &module,
                                       const InspectOptions &options = {}) {
  const Mode mode = assertion_mode();
  if (mode == Mode::off)
    return ::testing::AssertionSuccess();
  return verdict(expr, kind, inspect(module, options), mode);
}

// Predicate-formatters for EXPECT_PRED_FORMAT1/2.
template <class M>
::testing::AssertionResult NoDuplicateStorage(const char *e, const M &m) {
  return no_findings(e, rules::kDuplicateStorage, m);
}
template <class M>
::testing::AssertionResult NoDuplicateStorage(const char *e, const char *,
                                              const M &m,
                                              const InspectOptions &o) {
  return no_findings(e, rules::kDuplicateStorage, m, o);
}
template <class M>
::testing::AssertionResult NoUnreachableAllocation(const char *e, const M &m) {
  return no_findings(e, rules::kUnreachableAllocation, m);
}
template <class M>
::testing::AssertionResult NoUnreachableAllocation(const char *e, const char *,
                                                   const M &m,
                                                   const InspectOptions &o) {
  return no_findings(e, rules::kUnreachableAllocation, m, o);
}
template <class M>
::testing::AssertionResult NoProbeFindings(const char *e, const M &m) {
  return no_findings(e, {}, m);
}
template <class M>
::testing::AssertionResult NoProbeFindings(const char *e, const char *,
                                           const M &m,
                                           const InspectOptions &o) {
  return no_findings(e, {}, m, o);
}
inline ::testing::AssertionResult CleanReport(const char *e, const Report &r) {
  return verdict(e, {}, r, assertion_mode());
}

/// Runs `body` under a CopyObserver (not at all observed when off) and gives
/// the verdict on its discarded copies.
template <class F>
::testing::AssertionResult NoDiscardedCopies(const char *expr, F &&body) {
  const Mode mode = assertion_mode();
  if (mode == Mode::off) {
    body();
    return ::testing::AssertionSuccess();
  }
  Report report;
  {
    CopyObserver observer;
    body();
    report = observer.report();
  }
  return verdict(expr, rules::kDiscardedCopy, report, mode);
}

} // namespace devcopy::testing

// One or two arguments: (module) or (module, options).
#define DEVCOPY_GTEST_PICK_(_1, _2, NAME, ...) NAME
#define DEVCOPY_GTEST_ASSERT_(CHECK, PRED, ...)                                \
  DEVCOPY_GTEST_PICK_(__VA_ARGS__, CHECK##_PRED_FORMAT2, CHECK##_PRED_FORMAT1, \
                      unused)                                                  \
  (PRED, __VA_ARGS__)

#define EXPECT_NO_DUPLICATE_STORAGE(...)                                       \
  DEVCOPY_GTEST_ASSERT_(EXPECT, ::devcopy::testing::NoDuplicateStorage,        \
                        __VA_ARGS__)
#define ASSERT_NO_DUPLICATE_STORAGE(...)                                       \
  DEVCOPY_GTEST_ASSERT_(ASSERT, ::devcopy::testing::NoDuplicateStorage,        \
                        __VA_ARGS__)
#define EXPECT_NO_UNREACHABLE_ALLOCATION(...)                                  \
  DEVCOPY_GTEST_ASSERT_(EXPECT, ::devcopy::testing::NoUnreachableAllocation,   \
                        __VA_ARGS__)
#define ASSERT_NO_UNREACHABLE_ALLOCATION(...)                                  \
  DEVCOPY_GTEST_ASSERT_(ASSERT, ::devcopy::testing::NoUnreachableAllocation,   \
                        __VA_ARGS__)
#define EXPECT_NO_PROBE_FINDINGS(...)                                          \
  DEVCOPY_GTEST_ASSERT_(EXPECT, ::devcopy::testing::NoProbeFindings,           \
                        __VA_ARGS__)
#define ASSERT_NO_PROBE_FINDINGS(...)                                          \
  DEVCOPY_GTEST_ASSERT_(ASSERT, ::devcopy::testing::NoProbeFindings,           \
                        __VA_ARGS__)
#define EXPECT_CLEAN_REPORT(report)                                            \
  EXPECT_PRED_FORMAT1(::devcopy::testing::CleanReport, report)
#define ASSERT_CLEAN_REPORT(report)                                            \
  ASSERT_PRED_FORMAT1(::devcopy::testing::CleanReport, report)
// A statement (commas allowed), run under a CopyObserver.
#define EXPECT_NO_DISCARDED_COPIES(...)                                        \
  GTEST_ASSERT_(::devcopy::testing::NoDiscardedCopies(#__VA_ARGS__,            \
                                                      [&] { __VA_ARGS__; }),   \
                GTEST_NONFATAL_FAILURE_)
#define ASSERT_NO_DISCARDED_COPIES(...)                                        \
  GTEST_ASSERT_(::devcopy::testing::NoDiscardedCopies(#__VA_ARGS__,            \
                                                      [&] { __VA_ARGS__; }),   \
                GTEST_FATAL_FAILURE_)
