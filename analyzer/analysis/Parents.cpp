#include "Parents.h"
#include "clang/AST/DeclObjC.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"

namespace clang::tidy::devcopy {

DynTypedNode parentOf(const DynTypedNode &N, ASTContext &Ctx, bool *Shared) {
  DynTypedNodeList Parents = Ctx.getParents(N);
  if (Shared)
    *Shared = Parents.size() > 1;
  if (Parents.empty())
    return {};
  for (const DynTypedNode &P : Parents) {
    const auto *List = P.get<InitListExpr>();
    if (!List || !List->isSemanticForm() || !List->getSyntacticForm())
      return P;
  }
  return Parents[0];
}

const Expr *parentExpr(const Stmt *S, ASTContext &Ctx) {
  return S ? parentOf(*S, Ctx).get<Expr>() : nullptr;
}

llvm::SmallVector<const Stmt *, 1> parentStmts(const Stmt &S, ASTContext &Ctx) {
  llvm::SmallVector<const Stmt *, 1> Result;
  TraversalKindScope AsIs(Ctx, TK_AsIs);
  DynTypedNodeList Parents = Ctx.getParents(S);
  llvm::SmallVector<DynTypedNode, 1> Work(Parents.begin(), Parents.end());
  while (!Work.empty()) {
    DynTypedNode N = Work.pop_back_val();
    if (const auto *P = N.get<Stmt>()) {
      Result.push_back(P);
    } else {
      Parents = Ctx.getParents(N);
      Work.append(Parents.begin(), Parents.end());
    }
  }
  return Result;
}

FunctionBody enclosingFunction(const Stmt &S, ASTContext &Ctx, Lambdas L) {
  DynTypedNode Cur = DynTypedNode::create(S);
  for (int Depth = 0; Depth < 1024; ++Depth) {
    Cur = parentOf(Cur, Ctx);
    if (Cur.getNodeKind().isNone())
      return {};
    if (const auto *Lambda = Cur.get<LambdaExpr>(); Lambda && L == Lambdas::Own)
      return {Lambda->getCallOperator(), Lambda->getBody()};
    if (const auto *FD = Cur.get<FunctionDecl>())
      return {FD, FD->getBody()};
    // Their bodies are no function's CFG; a caller's walk goes through them.
    if (L == Lambdas::Own && (Cur.get<ObjCMethodDecl>() ||
                              Cur.get<BlockDecl>() || Cur.get<CapturedDecl>()))
      return {};
  }
  return {};
}

} // namespace clang::tidy::devcopy
