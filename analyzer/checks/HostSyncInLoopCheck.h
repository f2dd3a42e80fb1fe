// devcopy-host-sync-in-loop: a device-to-host synchronisation on every
// iteration of a loop, in code where an accelerator is in play.
#pragma once

#include "DevcopyCheck.h"
#include "analysis/CallSyncs.h"
#include "analysis/LoopFacts.h"
#include "analysis/SyncUse.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace clang::tidy::devcopy {

/// Flags `loss.item()`, `x.cpu()`, `x.to(kCPU)`, `x.nonzero()`, `std::cout <<
/// x`
/// ... run on every iteration of a loop (not under a condition that changes in
/// the loop, such as `step % 100 == 0`). Silent unless an accelerator is in
/// play: the function names one, or uses a device chosen elsewhere (a
/// parameter, a member); never in a program fixed to the CPU. See
/// rules/devcopy-host-sync-in-loop.md.
class HostSyncInLoopCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;
  void onEndOfTranslationUnit() override;

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void
  checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  /// A sync in \p Loop reading \p Recv (null: through a call) waits for an
  /// accelerator: where \p Recv lives when known, else whether the function
  /// or the file works with a device (DevicesInPlay).
  bool acceleratorInPlay(const Stmt &Loop, const Expr *Recv, ASTContext &Ctx);

  /// A read of a tensor's data in a loop, judged once every read of its
  /// translation unit is known: the reads of one value in one iteration are
  /// one finding, at the first.
  struct PendingRead {
    const Expr *Sync = nullptr;
    const Expr *Recv = nullptr;
    std::string Method;
    bool Typical = false; ///< runs on a typical iteration
    llvm::SmallVector<const Expr *, 2> Guards;
  };
  enum class Relation { None, SameValue, SameTensor };
  /// \p A runs before \p B in one iteration of \p Loop and both read the
  /// same value (or two elements of the same tensor), with nothing they read
  /// changed in between (utils::ExprSequence); with \p Want, only that
  /// relation is looked for.
  Relation relation(const Stmt &Loop, const PendingRead &A,
                    const PendingRead &B, LoopInvariance &Inv, ASTContext &Ctx,
                    Relation Want = Relation::None);
  /// Judges the reads of one tensor (one readKey) in \p Loop.
  void judgeReads(const Stmt &Loop, llvm::ArrayRef<PendingRead> All,
                  ASTContext &Ctx);
  /// Reports \p R, run on a typical iteration, by what it reads and how the
  /// host uses its value; \p Again are the later reads of the same value in
  /// the iteration (at most \p Times reads on one path), noted with it.
  void judgeRead(const Stmt &Loop, const PendingRead &R,
                 llvm::ArrayRef<const PendingRead *> Again, unsigned Times,
                 ASTContext &Ctx);

  /// The note naming the loop a warning is about, as devcopy-copy-in-loop's.
  void noteLoop(const Stmt &Loop);

  /// A call of a user function in a loop whose body syncs on every call.
  void checkCall(const CallExpr &Call, ASTContext &Ctx);
  SyncUses &usesIn(const Stmt &Loop, LoopInvariance &Inv, ASTContext &Ctx);

  LoopInvarianceCache Loops;
  CallSyncs Calls;
  /// The bucket of Reads a read of \p Recv goes to.
  static unsigned readKey(const Expr &Recv, ASTContext &Ctx);
  /// Reads of tensor data, per loop and per tensor read (readKey), in the
  /// order they were met.
  using ReadList = llvm::SmallVector<PendingRead, 2>;
  llvm::MapVector<const Stmt *, llvm::MapVector<unsigned, ReadList>> Reads;
  ASTContext *ReadsCtx = nullptr;
  llvm::DenseMap<const Stmt *, std::unique_ptr<SyncUses>> Uses;
  SyncUses::TrainingFunctions Trains;
};

} // namespace clang::tidy::devcopy
