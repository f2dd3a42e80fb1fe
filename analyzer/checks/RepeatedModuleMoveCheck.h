// devcopy-repeated-module-move: the same module moved more than once.
#pragma once

#include "DevcopyCheck.h"
#include "analysis/TorchMatchers.h"
#include "facts/MoveFacts.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <vector>

namespace clang::tidy::devcopy {

/// Flags a Module::to that repeats an earlier move of the same module: twice
/// in one function (directly, or through an owner's recursive move), or moved
/// in its own constructor and again by whoever holds it (the owner moving
/// itself or the member, or a function moving the object it created). Moves
/// are collected over the main file and the project's own headers (never
/// LibTorch's) and compared at the end of the translation unit. Across
/// translation units through facts (MoveFacts.h): handed to `devcopy analyze`
/// when it collects them, otherwise read from the facts file it wrote
/// (option FactsFile). See rules/devcopy-repeated-module-move.md.
class RepeatedModuleMoveCheck : public DevcopyCheck {
public:
  RepeatedModuleMoveCheck(StringRef Name, ClangTidyContext *Context);
  void onEndOfTranslationUnit() override;
  void storeOptions(ClangTidyOptions::OptionMap &Opts) override;

  /// One Module::to call.
  struct Move {
    const CXXMemberCallExpr *Call = nullptr;
    const FunctionDecl *Fn =
        nullptr; ///< enclosing function (lambdas: their caller)
    /// The object moved, from its root: {} for `this`, {var}, {field},
    /// {var, field} for `m->enc->to(d)`. Canonical declarations.
    llvm::SmallVector<const ValueDecl *, 3> Path;
    const CXXRecordDecl *Class = nullptr; ///< the module class moved
    CopyTarget Target;
    /// Innermost `if` around the call: condition spelling, `!` stripped, and
    /// whether the call runs when it is false.
    std::string Condition;
    bool Negated = false;
    bool Resolved = false;
  };

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void
  checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void addMove(const CXXMemberCallExpr &Call, const FunctionDecl *Fn);
  void collectFromHeaders();
  bool checkSameFunction(const Move &Later,
                         llvm::ArrayRef<const Move *> Earlier);
  bool checkConstructorMove(const Move &M);
  bool allRegistered(llvm::ArrayRef<const ValueDecl *> Fields) const;
  bool exclusive(const Move &A, const Move &B);
  bool reassignedBetween(const Move &A, const Move &B);
  const Move *
  findConstructorMove(const CXXRecordDecl *RD,
                      llvm::SmallVectorImpl<const FieldDecl *> &Via,
                      llvm::SmallPtrSetImpl<const CXXRecordDecl *> &Seen);
  // What a module-valued expression holds (RepeatedModuleMoveContents.cpp).
  const Move *movedInside(const Expr *E, unsigned Depth,
                          llvm::SmallPtrSetImpl<const void *> &Seen);
  const Move *storedIn(const ValueDecl &D, unsigned Depth,
                       llvm::SmallPtrSetImpl<const void *> &Seen);
  const Move *passedTo(const ParmVarDecl &P, unsigned Depth,
                       llvm::SmallPtrSetImpl<const void *> &Seen);
  std::string pathName(const Move &M) const;
  unsigned line(const Expr *E) const;
  // Across translation units (RepeatedModuleMoveFacts.cpp).
  void readCondition(Move &M) const;
  facts::UnitFacts unitFacts() const;
  void readFactory(const Move &M, facts::Move &F) const;
  const ValueDecl *registeredLocalField(const ValueDecl *D,
                                        const CXXRecordDecl *Owner) const;
  void checkAcrossUnits(facts::UnitFacts &Unit);
  std::string factsPath() const;
  SourceLocation locationIn(StringRef File, unsigned Line,
                            unsigned Column) const;

  std::string
      FactsFile; ///< option; "" = devcopy-facts.json beside the compile command

  std::vector<Move> Moves;
  llvm::SmallPtrSet<const CXXMemberCallExpr *, 16> SeenCalls;
  llvm::SmallPtrSet<const FieldDecl *, 16> Registered;
  /// Locals handed to register_module: the owner whose constructor registers
  /// them, and the member they are assigned to (or the local itself).
  llvm::DenseMap<const VarDecl *,
                 std::pair<const CXXRecordDecl *, const ValueDecl *>>
      RegisteredLocals;
  llvm::DenseMap<const CXXRecordDecl *, const Move *> ConstructorMoves;
  ASTContext *Ctx = nullptr;
};

} // namespace clang::tidy::devcopy
