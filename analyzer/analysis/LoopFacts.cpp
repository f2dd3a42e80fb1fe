#include "LoopFacts.h"
#include "Mutations.h"
#include "Parents.h"
#include "TorchMatchers.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::devcopy {

namespace {

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

std::optional<EnclosingLoop> findEnclosingLoop(const Stmt &S, ASTContext &Ctx,
                                               FunctionFlowCache *Flows) {
  EnclosingLoop Result;
  FunctionFlow *Flow = nullptr;
  auto Repeats = [&](const Stmt &Loop) {
    if (!Flows)
      return true;
    if (!Flow)
      Flow = Flows->around(Loop, Ctx);
    return !Flow || Flow->loopRepeats(Loop);
  };
  DynTypedNode Child = DynTypedNode::create(S);
  for (int Depth = 0; Depth < 256; ++Depth) {
    DynTypedNode ParentNode = parentOf(Child, Ctx);
    const Stmt *P = ParentNode.get<Stmt>();
    const Stmt *C = Child.get<Stmt>();
    if (!P) {
      // A declaration: keep climbing through variables (`auto v = x.item();`),
      // stop at anything that opens a new context (function, class).
      // A static local's initializer runs once.
      const Decl *D = ParentNode.get<Decl>();
      if (!D || llvm::isa<DeclContext>(D))
        return std::nullopt;
      if (const auto *VD = llvm::dyn_cast<VarDecl>(D);
          VD && VD->isStaticLocal())
        return std::nullopt;
      Child = ParentNode;
      continue;
    }
    if (const auto *F = llvm::dyn_cast<ForStmt>(P)) {
      if (C && (C == F->getBody() || C == F->getCond() || C == F->getInc()) &&
          Repeats(*F)) {
        Result.Loop = F;
        return Result;
      }
    } else if (llvm::isa<WhileStmt, DoStmt>(P)) {
      if (Repeats(*P)) {
        Result.Loop = P;
        return Result;
      }
    } else if (const auto *R = llvm::dyn_cast<CXXForRangeStmt>(P)) {
      if (C && (C == R->getBody() || C == R->getLoopVarStmt()) && Repeats(*R)) {
        Result.Loop = R;
        return Result;
      }
    } else if (const auto *If = llvm::dyn_cast<IfStmt>(P)) {
      if (C && (C == If->getThen() || C == If->getElse())) {
        Result.Guards.push_back(If->getCond());
        Result.Branches.push_back(C);
      }
    } else if (const auto *Sw = llvm::dyn_cast<SwitchStmt>(P)) {
      if (C && C == Sw->getBody()) {
        Result.Guards.push_back(Sw->getCond());
        Result.Branches.push_back(nullptr);
      }
    } else if (const auto *CO =
                   llvm::dyn_cast<AbstractConditionalOperator>(P)) {
      if (C && C != CO->getCond()) {
        Result.Guards.push_back(CO->getCond());
        Result.Branches.push_back(nullptr);
      }
    } else if (const auto *BO = llvm::dyn_cast<BinaryOperator>(P)) {
      if (BO->isLogicalOp() && C == BO->getRHS()) {
        Result.Guards.push_back(BO->getLHS());
        Result.Branches.push_back(nullptr);
      }
    } else if (llvm::isa<CXXCatchStmt>(P)) {
      Result.Guards.push_back(nullptr);
      Result.Branches.push_back(nullptr);
    } else if (llvm::isa<LambdaExpr>(P)) {
      return std::nullopt;
    }
    Child = ParentNode;
  }
  return std::nullopt;
}

LoopInvariance::LoopInvariance(const Stmt &Loop, ASTContext &Ctx)
    : Loop(Loop), Ctx(Ctx) {}

bool LoopInvariance::isInvariant(const VarDecl *VD) {
  if (!VD)
    return false;
  if (!VD->hasLocalStorage())
    // Globals may change anywhere; constants (torch::kCUDA) do not.
    return VD->getType().isConstQualified() || VD->isConstexpr();
  auto It = Cache.find(VD);
  if (It != Cache.end())
    return It->second;
  bool DeclaredInside = encloses(Ctx.getSourceManager(), Loop.getSourceRange(),
                                 VD->getLocation());
  bool Result = !DeclaredInside && !isMutatedInLoop(VD);
  Cache[VD] = Result;
  return Result;
}

llvm::ArrayRef<const DeclRefExpr *> LoopInvariance::refsTo(const VarDecl *VD) {
  if (!Refs) {
    using namespace ast_matchers;
    Refs.emplace();
    for (const auto &M :
         match(findAll(declRefExpr(to(varDecl(hasLocalStorage()))).bind("ref")),
               Loop, Ctx)) {
      const auto *Ref = M.getNodeAs<DeclRefExpr>("ref");
      (*Refs)[llvm::cast<VarDecl>(Ref->getDecl())].push_back(Ref);
    }
  }
  auto It = Refs->find(VD);
  if (It == Refs->end())
    return {};
  return It->second;
}

llvm::ArrayRef<const DeclRefExpr *>
LoopInvariance::mutatingRefsTo(const VarDecl *VD) {
  if (auto It = Mutating.find(VD); It != Mutating.end())
    return It->second;
  llvm::SmallVector<const DeclRefExpr *, 2> Found;
  for (const DeclRefExpr *R : refsTo(VD))
    if (refMutates(R))
      Found.push_back(R);
  return Mutating[VD] = std::move(Found);
}

bool LoopInvariance::isMutatedInLoop(const VarDecl *VD) {
  if (auto It = Mutated.find(VD); It != Mutated.end())
    return It->second;
  Mutated[VD] = false; // while in progress (a reference bound to itself)
  bool Result = llvm::any_of(
      refsTo(VD), [&](const DeclRefExpr *R) { return refMutates(R); });
  Mutated[VD] = Result;
  return Result;
}

const Stmt &LoopInvariance::scopeOf(const Expr *Ref) {
  // The statement the reference belongs to: the full expression, declaration
  // or range-for header around it. Every mutation ExprMutationAnalyzer knows
  // is visible there, except through a reference bound to it (refMutates).
  DynTypedNode Cur = DynTypedNode::create(*Ref);
  const Stmt *Scope = Ref;
  for (int Depth = 0; Depth < 64; ++Depth) {
    DynTypedNode P = parentOf(Cur, Ctx);
    if (P.getNodeKind().isNone())
      break;
    if (const auto *S = P.get<Stmt>()) {
      if (llvm::isa<CXXForRangeStmt>(S) && llvm::isa<DeclStmt>(Scope))
        return *S; // the range: `for (auto &e : x) e.add_(1)` changes x
      if (!llvm::isa<Expr, DeclStmt>(S) || S == &Loop)
        break;
      Scope = S;
    } else if (!P.get<VarDecl>()) {
      break;
    }
    Cur = P;
  }
  return *Scope;
}

bool LoopInvariance::refMutates(const DeclRefExpr *Ref) {
  const auto *VD = llvm::cast<VarDecl>(Ref->getDecl());
  const Expr *Use = Ref;
  const Expr *P = parentExpr(Use, Ctx);
  while (P && llvm::isa<ImplicitCastExpr, ParenExpr>(P)) {
    Use = P;
    P = parentExpr(P, Ctx);
  }
  if (isDeviceValue(VD->getType()))
    return changesDeviceValue(*Ref, Ctx);
  // A reference bound to it: what is done through the reference counts.
  if (const auto *Alias = parentOf(*Use, Ctx).get<VarDecl>();
      Alias && Alias->getType()->isReferenceType() &&
      !Alias->getType().getNonReferenceType().isConstQualified())
    return isMutatedInLoop(Alias);
  // An element read through a container's non-const operator[]
  // (`targets[b][i]` of a `std::vector<Tensor>`, `labels[i] == kind` of a
  // `std::array<int, N>&`): the container changes only where that element
  // does.
  if (const auto *Op = llvm::dyn_cast_or_null<CXXOperatorCallExpr>(P);
      Op && Op->getOperator() == OO_Subscript && Op->getArg(0) == Use &&
      !isTensorType(Use->getType()))
    return ExprMutationAnalyzer::Analyzer(scopeOf(Ref), Ctx, Memo)
               .findMutation(Op) ||
           (isTensorType(Op->getType()) && changedInPlace(Op, Ctx));
  if (ExprMutationAnalyzer::Analyzer(scopeOf(Ref), Ctx, Memo).findMutation(Ref))
    return true;
  return changedInPlace(Ref, Ctx);
}

bool LoopInvariance::isInvariant(const Expr *E) {
  return E && isInvariantStmt(E, 0);
}

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
    if (!Obj || !isPureValueType(Obj->getType()) ||
        isInPlaceName(MC->getMethodDecl()))
      return false;
  } else if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(S)) {
    OverloadedOperatorKind K = Op->getOperator();
    if (Op->isAssignmentOp() || K == OO_PlusPlus || K == OO_MinusMinus ||
        K == OO_Call)
      return false;
  } else if (const auto *C = llvm::dyn_cast<CallExpr>(S)) {
    // A function may return new data on each call; std::get<N>(t) reads an
    // element of a tuple (`std::get<0>(x.max(-1))`).
    const FunctionDecl *FD = C->getDirectCallee();
    if (!FD || !FD->isInStdNamespace() || !FD->getIdentifier() ||
        FD->getName() != "get")
      return false;
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
    if (const auto *CE = llvm::dyn_cast_or_null<Expr>(Child);
        CE && namesLocal(CE))
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
