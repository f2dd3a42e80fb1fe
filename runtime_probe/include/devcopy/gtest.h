// GoogleTest assertions over devcopy reports. Each one inspects (or takes) a
// report and fails with the full text report when findings of its rule are
// present:
//
//   EXPECT_NO_DUPLICATE_STORAGE(model);
//   ASSERT_NO_UNREACHABLE_ALLOCATION(model, devcopy::InspectOptions().root("opt", opt));
//   EXPECT_NO_PROBE_FINDINGS(model);           // any rule
//   EXPECT_CLEAN_REPORT(report);               // a Report you already have
//   EXPECT_NO_DISCARDED_COPIES(step(model, batch));  // runs it under a CopyObserver
//
// DEVCOPY_PROBE is honoured as by check(), with fail as the default under
// test: off passes without inspecting, warn prints the report and passes.
// Link devcopy::gtest.
#pragma once

#include <gtest/gtest.h>

#include <devcopy/rules_catalog.h>

#include <iostream>
#include <sstream>
#include <string_view>

#include "devcopy/copy_observer.h"
#include "devcopy/mode.h"
#include "devcopy/probe.h"

namespace devcopy::testing {

/// The mode assertions use: DEVCOPY_PROBE, or fail when unset.
inline Mode assertion_mode() { return mode_from_env(Mode::fail); }

/// The verdict every devcopy assertion gives on a finished report: findings
/// of `kind` (of any kind when empty) fail in fail mode and are printed in
/// warn mode. Reusable by other report producers (CopyObserver).
inline ::testing::AssertionResult verdict(const char* expr, std::string_view kind,
                                          const Report& report, Mode mode) {
  const Report relevant = only(report, kind);
  if (mode == Mode::off || !relevant.has_findings()) return ::testing::AssertionSuccess();
  std::ostringstream text;
  text << relevant;
  if (mode == Mode::warn) {
    std::cerr << text.str();
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << expr << " has " << relevant.findings().size() << " "
         << (kind.empty() ? std::string_view("devcopy") : kind) << " finding(s):\n"
         << text.str();
}

template <class M>
::testing::AssertionResult no_findings(const char* expr, std::string_view kind, const M& module,
                                       const InspectOptions& options = {}) {
  const Mode mode = assertion_mode();
  if (mode == Mode::off) return ::testing::AssertionSuccess();
  return verdict(expr, kind, inspect(module, options), mode);
}

// Predicate-formatters for EXPECT_PRED_FORMAT1/2.
template <class M>
::testing::AssertionResult NoDuplicateStorage(const char* e, const M& m) {
  return no_findings(e, rules::kDuplicateStorage, m);
}
template <class M>
::testing::AssertionResult NoDuplicateStorage(const char* e, const char*, const M& m,
                                              const InspectOptions& o) {
  return no_findings(e, rules::kDuplicateStorage, m, o);
}
template <class M>
::testing::AssertionResult NoUnreachableAllocation(const char* e, const M& m) {
  return no_findings(e, rules::kUnreachableAllocation, m);
}
template <class M>
::testing::AssertionResult NoUnreachableAllocation(const char* e, const char*, const M& m,
                                                   const InspectOptions& o) {
  return no_findings(e, rules::kUnreachableAllocation, m, o);
}
template <class M>
::testing::AssertionResult NoProbeFindings(const char* e, const M& m) {
  return no_findings(e, {}, m);
}
template <class M>
::testing::AssertionResult NoProbeFindings(const char* e, const char*, const M& m,
                                           const InspectOptions& o) {
  return no_findings(e, {}, m, o);
}
inline ::testing::AssertionResult CleanReport(const char* e, const Report& r) {
  return verdict(e, {}, r, assertion_mode());
}

/// Runs `body` under a CopyObserver (not at all observed when off) and gives
/// the verdict on its discarded copies.
template <class F>
::testing::AssertionResult NoDiscardedCopies(const char* expr, F&& body) {
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

}  // namespace devcopy::testing

// One or two arguments: (module) or (module, options).
#define DEVCOPY_GTEST_PICK_(_1, _2, NAME, ...) NAME
#define DEVCOPY_GTEST_ASSERT_(CHECK, PRED, ...)                                         \
  DEVCOPY_GTEST_PICK_(__VA_ARGS__, CHECK##_PRED_FORMAT2, CHECK##_PRED_FORMAT1, unused) \
  (PRED, __VA_ARGS__)

#define EXPECT_NO_DUPLICATE_STORAGE(...) \
  DEVCOPY_GTEST_ASSERT_(EXPECT, ::devcopy::testing::NoDuplicateStorage, __VA_ARGS__)
#define ASSERT_NO_DUPLICATE_STORAGE(...) \
  DEVCOPY_GTEST_ASSERT_(ASSERT, ::devcopy::testing::NoDuplicateStorage, __VA_ARGS__)
#define EXPECT_NO_UNREACHABLE_ALLOCATION(...) \
  DEVCOPY_GTEST_ASSERT_(EXPECT, ::devcopy::testing::NoUnreachableAllocation, __VA_ARGS__)
#define ASSERT_NO_UNREACHABLE_ALLOCATION(...) \
  DEVCOPY_GTEST_ASSERT_(ASSERT, ::devcopy::testing::NoUnreachableAllocation, __VA_ARGS__)
#define EXPECT_NO_PROBE_FINDINGS(...) \
  DEVCOPY_GTEST_ASSERT_(EXPECT, ::devcopy::testing::NoProbeFindings, __VA_ARGS__)
#define ASSERT_NO_PROBE_FINDINGS(...) \
  DEVCOPY_GTEST_ASSERT_(ASSERT, ::devcopy::testing::NoProbeFindings, __VA_ARGS__)
#define EXPECT_CLEAN_REPORT(report) \
  EXPECT_PRED_FORMAT1(::devcopy::testing::CleanReport, report)
#define ASSERT_CLEAN_REPORT(report) \
  ASSERT_PRED_FORMAT1(::devcopy::testing::CleanReport, report)
// A statement (commas allowed), run under a CopyObserver.
#define EXPECT_NO_DISCARDED_COPIES(...)                                                 \
  GTEST_ASSERT_(::devcopy::testing::NoDiscardedCopies(#__VA_ARGS__, [&] { __VA_ARGS__; }), \
                GTEST_NONFATAL_FAILURE_)
#define ASSERT_NO_DISCARDED_COPIES(...)                                                 \
  GTEST_ASSERT_(::devcopy::testing::NoDiscardedCopies(#__VA_ARGS__, [&] { __VA_ARGS__; }), \
                GTEST_FATAL_FAILURE_)
