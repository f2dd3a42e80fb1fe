// Which of two statements of one function runs first: the answers of
// clang-tidy's utils::ExprSequence::inSequence, in time independent of the
// function's length.
//
// ExprSequence walks a statement's chain of later siblings one at a time,
// finding each next sibling by a scan of its compound statement, and answers a
// "no" only at the end of the body: over a loop of N statements one question
// costs O(N^2), and the loop checks ask one per read. This keeps its rules
// (the same successors, the same parents, the same synthetic statements) and
// indexes each compound statement once, so a question costs the depth of the
// two statements.
#pragma once

#include "clang/AST/ASTContext.h"
#include "clang/Analysis/CFG.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::devcopy {

class SequenceIndex {
public:
  SequenceIndex(const CFG *TheCFG, const Stmt *Root, ASTContext *Ctx);

  /// \p Before is sequenced before \p After, as
  /// utils::ExprSequence::inSequence says.
  bool inSequence(const Stmt *Before, const Stmt *After);

private:
  /// A compound statement whose children each have it as their only parent:
  /// a chain of successors starting in it runs through its later children.
  struct Compound {
    bool Clean = false;
    llvm::DenseMap<const Stmt *, unsigned> Position;
  };
  /// The compound statement \p S is a child of, when it is \p S's only parent
  /// and clean and within the root; its position there.
  const Compound *compoundOf(const Stmt *S, unsigned &Position);
  const Compound &indexOf(const CompoundStmt *C);
  llvm::SmallVector<const Stmt *, 1> parents(const Stmt *S);
  bool inRoot(const Stmt *S);
  const Stmt *successor(const Stmt *S);
  const Stmt *resolve(const Stmt *S) const;
  /// The recursion of ExprSequence::inSequence for one \p After, whose
  /// ancestors (itself included) are \p Above and, per clean compound holding
  /// one, the last position of one among its children, \p Last.
  bool follows(const Stmt *Before, const Stmt *After,
               const llvm::DenseSet<const Stmt *> &Above,
               const llvm::DenseMap<const Compound *, unsigned> &Last,
               llvm::DenseSet<const Stmt *> &Refuted);

  ASTContext *Ctx;
  const Stmt *Root;
  llvm::DenseMap<const Stmt *, const Stmt *> Synthetic;
  llvm::DenseMap<const Stmt *, bool> InRoot;
  llvm::DenseMap<const CompoundStmt *, std::unique_ptr<Compound>> Compounds;
};

} // namespace clang::tidy::devcopy
