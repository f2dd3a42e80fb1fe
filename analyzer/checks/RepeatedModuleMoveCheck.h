// devcopy-repeated-module-move: the same module moved more than once.
#pragma once

#include "TorchMatchers.h"
#include "DevcopyCheck.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <vector>

namespace clang::tidy::devcopy {

/// Flags a Module::to that repeats an earlier move of the same module: twice
/// in one function (directly, or through an owner's recursive move), or moved
/// in its own constructor and again by whoever holds it (the owner moving
/// itself or the member, or a function moving the object it created). Moves
/// are collected over the main file and the project's own headers (never
/// LibTorch's) and compared at the end of the translation unit. See rules/devcopy-repeated-module-move.md.
class RepeatedModuleMoveCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;
  void onEndOfTranslationUnit() override;

  /// One Module::to call.
  struct Move {
    const CXXMemberCallExpr *Call = nullptr;
    const FunctionDecl *Fn = nullptr;  ///< enclosing function (lambdas: their caller)
    /// The object moved, from its root: {} for `this`, {var}, {field},
    /// {var, field} for `m->enc->to(d)`. Canonical declarations.
    llvm::SmallVector<const ValueDecl *, 3> Path;
    const CXXRecordDecl *Class = nullptr; ///< the module class moved
    CopyTarget Target;
  };

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void addMove(const CXXMemberCallExpr &Call, const FunctionDecl *Fn);
  void collectFromHeaders();
  bool checkSameFunction(const Move &Later, llvm::ArrayRef<const Move *> Earlier);
  bool checkConstructorMove(const Move &M);
  bool allRegistered(llvm::ArrayRef<const ValueDecl *> Fields) const;
  bool exclusive(const Move &A, const Move &B);
  bool reassignedBetween(const Move &A, const Move &B);
  const Move *findConstructorMove(const CXXRecordDecl *RD,
                                  llvm::SmallVectorImpl<const FieldDecl *> &Via,
                                  llvm::SmallPtrSetImpl<const CXXRecordDecl *> &Seen);
  std::string pathName(const Move &M) const;
  unsigned line(const Expr *E) const;

  std::vector<Move> Moves;
  llvm::SmallPtrSet<const CXXMemberCallExpr *, 16> SeenCalls;
  llvm::SmallPtrSet<const FieldDecl *, 16> Registered;
  llvm::DenseMap<const CXXRecordDecl *, const Move *> ConstructorMoves;
  ASTContext *Ctx = nullptr;
};

} // namespace clang::tidy::devcopy
