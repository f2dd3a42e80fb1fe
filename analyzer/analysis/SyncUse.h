// How a value read from the device is used inside a loop: decides whether a
// host sync on every iteration is waste or the price of what the host needs.
//
// A value the host needs on every iteration (to decide control flow, index
// host data, build host results, or write each sample's result out) makes its
// first read necessary. A value only summed into a host total, kept for after
// the loop, dropped, or printed as the progress of a training step (a loop
// that calls backward() or an optimizer's step()) could be read once after
// the loop or every N steps: those reads are findings.
#pragma once

#include "LoopFacts.h"
#include "TensorPlace.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"
#include <string>

namespace clang::tidy::devcopy {

enum class UseKind {
  Dropped,     ///< never used, or kept only for after the loop
  Accumulated, ///< summed into a host variable (`total += v`), or kept in a
               ///< local container read only after the loop
  Output,      ///< written to a stream or passed to a function (progress, logs)
  Needed,      ///< control flow, indexing, host results: the host needs it
};

struct ValueUse {
  UseKind Kind = UseKind::Dropped;
  std::string Into;      ///< the accumulator's name, for Accumulated
  bool Returned = false; ///< Needed because it is returned (a caller decides)
  bool Kept = false;     ///< Accumulated into a container, not a sum
};

/// The use that says more of what the host needs (the later kind above):
/// a value summed and also written out per sample is output.
ValueUse combine(const ValueUse &A, const ValueUse &B);

/// Classifies the uses of synced values inside one loop; memoised per
/// variable. Built from the loop's LoopInvariance (its references).
class SyncUses {
public:
  /// Whether a function of the file runs a training step, kept for the
  /// translation unit (the loops of a file call the same functions).
  using TrainingFunctions = llvm::DenseMap<const FunctionDecl *, bool>;

  /// With \p Places, a value stored into a tensor that is not known to be
  /// on the host (`target[i][k] = q`) goes back to the device: not needed
  /// by the host. With \p Trains, the answers of isTrainingLoop's callees
  /// are shared with other loops.
  SyncUses(const Stmt &Loop, LoopInvariance &Inv, ASTContext &Ctx,
           TensorPlaces *Places = nullptr, TrainingFunctions *Trains = nullptr)
      : Loop(Loop), Inv(Inv), Ctx(Ctx), Places(Places), Trains(Trains) {}

  /// The use of the value \p Read evaluates to (an item(), a cpu(), ...).
  ValueUse classify(const Expr *Read);
  /// The loop runs a training step itself (not only in a nested loop): it
  /// calls backward() on a tensor or step()/zero_grad() on an optimizer,
  /// directly or in a function of this file that it calls.
  bool isTrainingLoop();

private:
  ValueUse fromExpr(const Expr *E, unsigned Depth);
  ValueUse fromVar(const VarDecl *VD, unsigned Depth);
  ValueUse fromCall(const CallExpr *Call, const Expr *Arg, unsigned Depth);
  /// \p Container (a store method's object) is a local container that the
  /// loop only fills: read after the loop, never in it, never returned.
  bool keptForAfterLoop(const Expr *Container);

  const Stmt &Loop;
  LoopInvariance &Inv;
  ASTContext &Ctx;
  TensorPlaces *Places;
  TrainingFunctions *Trains;
  std::optional<bool> Training;
  llvm::DenseMap<const VarDecl *, ValueUse> Vars;
};

} // namespace clang::tidy::devcopy
