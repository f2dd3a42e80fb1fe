#include "LoopFacts.h"
#include "TorchMatchers.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

namespace clang::tidy::devcopy {

namespace {

const Stmt *firstParentStmt(const DynTypedNode &N, ASTContext &Ctx, DynTypedNode *Out) {
  auto Parents = Ctx.getParents(N);
  if (Parents.empty())
    return nullptr;
  *Out = Parents[0];
  return Out->get<Stmt>();
}

/// The parent expression of \p E, or null.
const Expr *parentExpr(const Expr *E, ASTContext &Ctx) {
  auto Parents = Ctx.getParents(*E);
  return Parents.empty() ? nullptr : Parents[0].get<Expr>();
}

bool isInPlaceName(const NamedDecl *D) {
  return D && D->getIdentifier() && D->getName().size() > 1 && D->getName().ends_with("_");
}

bool isDeviceValue(QualType T) {
  const auto *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() &&
         (RD->getName() == "Device" || RD->getName() == "TensorOptions");
}

/// Value types whose methods only compute from their operands.
bool isPureValueType(QualType T) {
  if (isTensorType(T))
    return true;
  const auto *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() &&
         (RD->getName() == "Device" || RD->getName() == "TensorOptions" ||
          RD->getName() == "ArrayRef" || RD->getName() == "IntArrayRef");
}

} // namespace

std::optional<EnclosingLoop> findEnclosingLoop(const Stmt &S, ASTContext &Ctx) {
  EnclosingLoop Result;
  DynTypedNode Child = DynTypedNode::create(S);
  for (int Depth = 0; Depth < 256; ++Depth) {
    DynTypedNode ParentNode;
    const Stmt *P = firstParentStmt(Child, Ctx, &ParentNode);
    const Stmt *C = Child.get<Stmt>();
    if (!P) {
      // A declaration: keep climbing through variables (`auto v = x.item();`),
      // stop at anything that opens a new context (function, class).
      const Decl *D = ParentNode.get<Decl>();
      if (!D || llvm::isa<DeclContext>(D))
        return std::nullopt;
      Child = ParentNode;
      continue;
    }
    if (const auto *F = llvm::dyn_cast<ForStmt>(P)) {
      if (C && (C == F->getBody() || C == F->getCond() || C == F->getInc())) {
        Result.Loop = F;
        return Result;
      }
    } else if (llvm::isa<WhileStmt, DoStmt>(P)) {
      Result.Loop = P;
      return Result;
    } else if (const auto *R = llvm::dyn_cast<CXXForRangeStmt>(P)) {
      if (C && (C == R->getBody() || C == R->getLoopVarStmt())) {
        Result.Loop = R;
        return Result;
      }
    } else if (const auto *If = llvm::dyn_cast<IfStmt>(P)) {
      if (C && (C == If->getThen() || C == If->getElse()))
        Result.Guards.push_back(If->getCond());
    } else if (const auto *Sw = llvm::dyn_cast<SwitchStmt>(P)) {
      if (C && C == Sw->getBody())
        Result.Guards.push_back(Sw->getCond());
    } else if (const auto *CO = llvm::dyn_cast<AbstractConditionalOperator>(P)) {
      if (C && C != CO->getCond())
        Result.Guards.push_back(CO->getCond());
    } else if (const auto *BO = llvm::dyn_cast<BinaryOperator>(P)) {
      if (BO->isLogicalOp() && C == BO->getRHS())
        Result.Guards.push_back(BO->getLHS());
    } else if (llvm::isa<CXXCatchStmt>(P)) {
      Result.Guards.push_back(nullptr);
    } else if (llvm::isa<LambdaExpr>(P)) {
      return std::nullopt;
    }
    Child = ParentNode;
  }
  return std::nullopt;
}

LoopInvariance::LoopInvariance(const Stmt &Loop, ASTContext &Ctx)
    : Loop(Loop), Ctx(Ctx), Mutations(Loop, Ctx) {}

bool LoopInvariance::isInvariant(const VarDecl *VD) {
  if (!VD)
    return false;
  if (!VD->hasLocalStorage())
    // Globals may change anywhere; constants (torch::kCUDA) do not.
    return VD->getType().isConstQualified() || VD->isConstexpr();
  auto It = Cache.find(VD);
  if (It != Cache.end())
    return It->second;
  const SourceManager &SM = Ctx.getSourceManager();
  SourceRange LoopRange = Loop.getSourceRange();
  SourceLocation Where = VD->getLocation();
  bool DeclaredInside = LoopRange.isValid() && Where.isValid() &&
                        !SM.isBeforeInTranslationUnit(Where, LoopRange.getBegin()) &&
                        !SM.isBeforeInTranslationUnit(LoopRange.getEnd(), Where);
  bool Result = !DeclaredInside && !isMutatedInLoop(VD);
  Cache[VD] = Result;
  return Result;
}

bool LoopInvariance::isMutatedInLoop(const VarDecl *VD) {
  if (isDeviceValue(VD->getType()))
    return deviceValueChanged(VD);
  return Mutations.isMutated(VD) || changedInPlace(VD);
}

bool LoopInvariance::deviceValueChanged(const VarDecl *VD) {
  // Every `t.to(device)` binds `device` to TensorOptions' forwarding-reference
  // constructor, which ExprMutationAnalyzer takes for a mutation. A Device or
  // TensorOptions changes by assignment or a non-const method (set_index).
  using namespace ast_matchers;
  auto Ref = ignoringParenImpCasts(declRefExpr(to(varDecl(equalsNode(VD)))));
  auto Changes = match(
      findAll(expr(anyOf(cxxOperatorCallExpr(isAssignmentOperator(), hasArgument(0, Ref)),
                         cxxMemberCallExpr(on(Ref), callee(cxxMethodDecl(unless(isConst()))))))
                  .bind("change")),
      Loop, Ctx);
  return !Changes.empty();
}

bool LoopInvariance::changedInPlace(const VarDecl *VD) {
  using namespace ast_matchers;
  auto Refs = match(findAll(declRefExpr(to(varDecl(equalsNode(VD)))).bind("ref")), Loop, Ctx);
  for (const auto &Ref : Refs) {
    // Climb from the reference through views of it (x[i], x.narrow(...),
    // x.index(...): tensors sharing its storage) to what is done to them.
    const Expr *Cur = Ref.getNodeAs<DeclRefExpr>("ref");
    for (int Depth = 0; Cur && Depth < 16; ++Depth) {
      const Expr *P = parentExpr(Cur, Ctx);
      if (!P)
        break;
      if (llvm::isa<ImplicitCastExpr, ParenExpr, MaterializeTemporaryExpr,
                    CXXBindTemporaryExpr>(P)) {
        Cur = P;
        continue;
      }
      if (const auto *ME = llvm::dyn_cast<MemberExpr>(P)) {
        const auto *Call = llvm::dyn_cast_or_null<CXXMemberCallExpr>(parentExpr(ME, Ctx));
        if (!Call || Call->getCallee() != ME)
          break;
        if (isInPlaceName(ME->getMemberDecl()))
          return true;
        if (!isTensorType(Call->getType()))
          break;
        Cur = Call;
        continue;
      }
      if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(P)) {
        if (Op->getNumArgs() == 0 || Op->getArg(0)->IgnoreParenImpCasts() != Cur->IgnoreParenImpCasts())
          break;
        if (Op->isAssignmentOp())
          return true;
        if (Op->getOperator() == OO_Subscript && isTensorType(Op->getType())) {
          Cur = Op;
          continue;
        }
      }
      break;
    }
  }
  return false;
}

bool LoopInvariance::isInvariant(const Expr *E) { return E && isInvariantStmt(E, 0); }

bool LoopInvariance::isInvariantStmt(const Stmt *S, unsigned Depth) {
  if (!S)
    return true;
  if (Depth > 32)
    return false;
  if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(S)) {
    if (const auto *VD = llvm::dyn_cast<VarDecl>(DRE->getDecl()))
      return isInvariant(VD);
    return true; // functions, enumerators
  }
  if (llvm::isa<CXXThisExpr, LambdaExpr, CXXNewExpr, StmtExpr>(S))
    return false;
  if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(S)) {
    const Expr *Obj = MC->getImplicitObjectArgument();
    if (!Obj || !isPureValueType(Obj->getType()) || isInPlaceName(MC->getMethodDecl()))
      return false;
  } else if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(S)) {
    OverloadedOperatorKind K = Op->getOperator();
    if (Op->isAssignmentOp() || K == OO_PlusPlus || K == OO_MinusMinus || K == OO_Call)
      return false;
  } else if (llvm::isa<CallExpr>(S)) {
    return false; // a function may return new data on each call
  }
  for (const Stmt *Child : S->children())
    if (!isInvariantStmt(Child, Depth + 1))
      return false;
  return true;
}

bool LoopInvariance::namesLocal(const Expr *E) {
  if (!E)
    return false;
  if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(E))
    if (const auto *VD = llvm::dyn_cast<VarDecl>(DRE->getDecl()))
      return VD->hasLocalStorage();
  for (const Stmt *Child : E->children())
    if (const auto *CE = llvm::dyn_cast_or_null<Expr>(Child); CE && namesLocal(CE))
      return true;
  return false;
}

bool LoopInvariance::runsEveryIteration(const EnclosingLoop &L) {
  for (const Expr *G : L.Guards)
    if (!G || !isInvariant(G))
      return false;
  return true;
}

LoopInvariance &LoopInvarianceCache::get(const Stmt &Loop, ASTContext &Ctx) {
  std::unique_ptr<LoopInvariance> &Slot = Map[&Loop];
  if (!Slot)
    Slot = std::make_unique<LoopInvariance>(Loop, Ctx);
  return *Slot;
}

} // namespace clang::tidy::devcopy
