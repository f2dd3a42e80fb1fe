#include "CopyInLoopCheck.h"
#include "analysis/DiscardedValue.h"
#include "analysis/Mutations.h"
#include "analysis/Parents.h"
#include "analysis/TorchMatchers.h"
#include "clang/AST/StmtCXX.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
/// " of its 32.0 KiB" when the tensor is a local made by a factory of literal
/// sizes (see factoryBytes), else "".
std::string knownSize(const Expr *Recv, const ASTContext &Ctx) {
  const auto *Ref =
      llvm::dyn_cast_or_null<DeclRefExpr>(ignoreConversions(Recv));
  const auto *Var = Ref ? llvm::dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  const auto *Init =
      Var && Var->getInit()
          ? llvm::dyn_cast<CallExpr>(ignoreConversions(Var->getInit()))
          : nullptr;
  if (std::optional<uint64_t> Bytes =
          Init ? factoryBytes(*Init, Ctx) : std::nullopt)
    return " of its " + formatBytes(*Bytes);
  return "";
}
/// The member of `this` that \p E names (`anchors_`, `this->anchors`), or null.
const FieldDecl *thisMember(const Expr *E) {
  const auto *ME = llvm::dyn_cast<MemberExpr>(E->IgnoreParenImpCasts());
  if (!ME || !llvm::isa<CXXThisExpr>(ME->getBase()->IgnoreParenImpCasts()))
    return nullptr;
  return llvm::dyn_cast<FieldDecl>(ME->getMemberDecl());
}

/// \p E without its element accesses (`x[i]`, `x.at(i)`, `x[i][j]`); the
/// indices go to \p Indices.
const Expr *peelElements(const Expr *E,
                         llvm::SmallVectorImpl<const Expr *> &Indices) {
  for (int Depth = 0; E && Depth < 8; ++Depth) {
    E = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(E);
        Op && Op->getOperator() == OO_Subscript && Op->getNumArgs() == 2) {
      Indices.push_back(Op->getArg(1));
      E = Op->getArg(0);
    } else if (const auto *AS = llvm::dyn_cast<ArraySubscriptExpr>(E)) {
      Indices.push_back(AS->getIdx());
      E = AS->getBase();
    } else if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E);
               MC && MC->getMethodDecl() &&
               MC->getMethodDecl()->getIdentifier() &&
               MC->getMethodDecl()->getName() == "at" &&
               MC->getNumArgs() == 1) {
      Indices.push_back(MC->getArg(0));
      E = MC->getImplicitObjectArgument();
    } else {
      return E;
    }
  }
  return E;
}

const Stmt *loopBody(const Stmt &Loop) {
  if (const auto *F = llvm::dyn_cast<ForStmt>(&Loop))
    return F->getBody();
  if (const auto *R = llvm::dyn_cast<CXXForRangeStmt>(&Loop))
    return R->getBody();
  if (const auto *W = llvm::dyn_cast<WhileStmt>(&Loop))
    return W->getBody();
  if (const auto *D = llvm::dyn_cast<DoStmt>(&Loop))
    return D->getBody();
  return nullptr;
}

/// A use of a member that may change it: assigned (or an element of it),
/// changed in place (`add_`), modified as a container, bound to a non-const
/// reference or passed as one.
bool changesMember(const Expr &Use, ASTContext &Ctx) {
  DynTypedNode Cur = DynTypedNode::create(Use);
  for (int Depth = 0; Depth < 16; ++Depth) {
    DynTypedNode P = parentOf(Cur, Ctx);
    if (P.getNodeKind().isNone())
      return false;
    const Expr *Child = Cur.get<Expr>();
    if (const auto *VD = P.get<VarDecl>())
      return VD->getType()->isReferenceType() &&
             !VD->getType().getNonReferenceType().isConstQualified();
    const auto *PE = P.get<Expr>();
    if (!PE)
      return false;
    if (llvm::isa<ImplicitCastExpr, ParenExpr, MaterializeTemporaryExpr,
                  CXXBindTemporaryExpr>(PE)) {
      Cur = P;
      continue;
    }
    if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(PE)) {
      if (Op->getNumArgs() == 0 ||
          Op->getArg(0)->IgnoreParenImpCasts() != Child->IgnoreParenImpCasts())
        return false;
      if (Op->isAssignmentOp() || Op->getOperator() == OO_PlusPlus ||
          Op->getOperator() == OO_MinusMinus)
        return true;
      if (Op->getOperator() != OO_Subscript)
        return false;
      Cur = P;
      continue;
    }
    if (const auto *BO = llvm::dyn_cast<BinaryOperator>(PE))
      return BO->isAssignmentOp() && BO->getLHS()->IgnoreParenImpCasts() ==
                                         Child->IgnoreParenImpCasts();
    if (const auto *ME = llvm::dyn_cast<MemberExpr>(PE)) {
      const auto *MD = llvm::dyn_cast<CXXMethodDecl>(ME->getMemberDecl());
      if (!MD || !MD->getIdentifier())
        return false;
      llvm::StringRef N = MD->getName();
      if (isInPlaceName(MD) || N == "push_back" || N == "emplace_back" ||
          N == "insert" || N == "erase" || N == "clear" || N == "resize" ||
          N == "assign" || N == "swap" || N == "pop_back" || N == "emplace" ||
          N == "set_data" || N == "set_requires_grad")
        return true;
      DynTypedNode Up = parentOf(P, Ctx);
      if (!Up.get<CXXMemberCallExpr>() || N != "at")
        return false; // a read (to(), size(), a view read once)
      Cur = Up;
      continue;
    }
    if (const auto *Call = llvm::dyn_cast<CallExpr>(PE)) {
      const FunctionDecl *FD = Call->getDirectCallee();
      for (unsigned I = 0;
           FD && I < Call->getNumArgs() && I < FD->getNumParams(); ++I)
        if (Call->getArg(I)->IgnoreParenImpCasts() ==
            Child->IgnoreParenImpCasts()) {
          QualType T = FD->getParamDecl(I)->getType();
          return T->isReferenceType() &&
                 !T.getNonReferenceType().isConstQualified();
        }
      return !FD;
    }
    return false;
  }
  return false;
}
} // namespace

/// The member never changes in \p Loop: no use of it there may change it, no
/// method of the object that may change it is called, `this` goes nowhere
/// else, and it is not a registered parameter or buffer (an optimizer or a
/// module move changes those).
bool CopyInLoopCheck::memberUnchanged(const FieldDecl &F, const Stmt &Loop,
                                      ASTContext &Ctx) {
  using namespace ast_matchers;
  auto This = cxxThisExpr().bind("this");
  for (const BoundNodes &N : match(findAll(This), Loop, Ctx)) {
    const auto *T = N.getNodeAs<CXXThisExpr>("this");
    DynTypedNode P = parentOf(*T, Ctx);
    while (P.get<ImplicitCastExpr>())
      P = parentOf(P, Ctx);
    const auto *ME = P.get<MemberExpr>();
    if (!ME)
      return false; // `this` handed somewhere
    if (const auto *MD = llvm::dyn_cast<CXXMethodDecl>(ME->getMemberDecl())) {
      if (!MD->isConst() && !MD->isStatic())
        return false; // a method that may change the member
      continue;
    }
    if (ME->getMemberDecl() == &F && changesMember(*ME, Ctx))
      return false;
  }
  // Registered with the module: parameters and buffers change under an
  // optimizer step and move with the module.
  const auto *RD = llvm::dyn_cast<CXXRecordDecl>(F.getParent());
  auto Named = memberExpr(member(equalsNode(&F)));
  auto Register = callExpr(callee(
      functionDecl(hasAnyName("register_parameter", "register_buffer"))));
  auto Registered =
      ignoringImplicit(expr(anyOf(Register, hasDescendant(Register))));
  auto Registration = stmt(
      anyOf(cxxOperatorCallExpr(isAssignmentOperator(),
                                hasArgument(0, ignoringParenImpCasts(Named)),
                                hasArgument(1, Registered)),
            callExpr(Register, hasAnyArgument(ignoringImplicit(Named)))));
  if (!RD)
    return false;
  for (const CXXMethodDecl *MD : RD->methods()) {
    const FunctionDecl *Def = nullptr;
    if (MD->hasBody(Def) && Def->getBody() &&
        !match(findAll(Registration), *Def->getBody(), Ctx).empty())
      return false;
    if (const auto *Ctor = llvm::dyn_cast_or_null<CXXConstructorDecl>(Def))
      for (const CXXCtorInitializer *Init : Ctor->inits())
        if (Init->getMember() == &F && Init->getInit() &&
            !match(expr(Registered), *Init->getInit(), Ctx).empty())
          return false;
  }
  return true;
}

/// \p E is the same value on every iteration of \p Loop: invariant as
/// LoopInvariance says, a member of `this` that never changes there, or an
/// element of either indexed by the variables of loops inside \p Loop (each
/// iteration walks the same elements again).
bool CopyInLoopCheck::sameEachIteration(const Expr *E, const Stmt &Loop,
                                        LoopInvariance &Inv, ASTContext &Ctx) {
  if (LoopInvariance::namesLocal(E) && Inv.isInvariant(E))
    return true;
  llvm::SmallVector<const Expr *, 2> Indices;
  const Expr *Base = peelElements(E, Indices);
  if (const FieldDecl *F = thisMember(Base)) {
    if (!memberUnchanged(*F, Loop, Ctx))
      return false;
  } else if (!LoopInvariance::namesLocal(Base) || !Inv.isInvariant(Base)) {
    return false;
  }
  using namespace ast_matchers;
  auto InnerVar = varDecl(anyOf(hasParent(declStmt(hasParent(forStmt()))),
                                hasParent(cxxForRangeStmt())));
  for (const Expr *I : Indices) {
    if (Inv.isInvariant(I))
      continue;
    // Only variables of loops nested in this one, combined by operators.
    if (!match(expr(hasDescendant(callExpr(unless(cxxOperatorCallExpr())))), *I,
               Ctx)
             .empty())
      return false;
    for (const BoundNodes &N :
         match(findAll(declRefExpr(to(varDecl().bind("v")))), *I, Ctx)) {
      const auto *V = N.getNodeAs<VarDecl>("v");
      const SourceManager &SM = Ctx.getSourceManager();
      const Stmt *Body = loopBody(Loop);
      if (!Inv.isInvariant(V) &&
          (!Body || match(varDecl(InnerVar), *V, Ctx).empty() ||
           SM.isBeforeInTranslationUnit(V->getLocation(), Body->getBeginLoc())))
        return false;
    }
  }
  return true;
}

namespace {
AST_MATCHER(FunctionDecl, takesTensor) {
  return llvm::any_of(Node.parameters(), [](const ParmVarDecl *P) {
    return isTensorType(P->getType());
  });
}
} // namespace

void CopyInLoopCheck::registerCheckMatchers(MatchFinder *Finder) {
  // Calls in loops to helpers that may copy a tensor they are given
  // (CopyInLoopCalls.cpp).
  Finder->addMatcher(
      callExpr(matchers::isInMainFileCode(), unless(cxxOperatorCallExpr()),
               callee(functionDecl(takesTensor(),
                                   unless(isExpansionInSystemHeader()))))
          .bind("helpercall"),
      this);
  // Device and dtype conversions only: clone() and contiguous() are asked for
  // by name, and a loop often needs a fresh copy each time.
  Finder->addMatcher(
      expr(matchers::isInMainFileCode(),
           matchers::tensorMethodCall(
               {"to", "cpu", "cuda", "toType", "type_as"}, "copy")),
      this);
}

bool CopyInLoopCheck::resultMutated(const Expr &Call, LoopInvariance &Inv,
                                    ASTContext &Ctx) {
  DynTypedNode Cur = DynTypedNode::create(Call);
  for (int Depth = 0; Depth < 6; ++Depth) {
    DynTypedNode P = parentOf(Cur, Ctx);
    if (const auto *VD = P.get<VarDecl>())
      return Inv.isMutatedInLoop(VD);
    const auto *E = P.get<Expr>();
    if (!E ||
        !llvm::isa<ImplicitCastExpr, MaterializeTemporaryExpr,
                   CXXBindTemporaryExpr, ExprWithCleanups, CXXConstructExpr>(E))
      return false;
    Cur = P;
  }
  return false;
}

void CopyInLoopCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("helpercall")) {
    checkCallInLoop(*Call, *Result.Context);
    return;
  }
  const auto *Call = Result.Nodes.getNodeAs<CXXMemberCallExpr>("copy");
  const auto *Recv = Result.Nodes.getNodeAs<Expr>("copy.recv");
  if (!Call || !Recv)
    return;
  ASTContext &Ctx = *Result.Context;
  // `x.to(d);` as a statement: devcopy-discarded-copy reports it (assign the
  // result or remove the call; hoisting a dropped copy fixes nothing).
  if (isDiscardedValue(*Call, Ctx))
    return;
  // The innermost loop in which neither the tensor nor the target changes,
  // and that runs the copy on every iteration (the guards met on the way
  // must not change there either).
  std::optional<EnclosingLoop> L = Loops.enclosingLoop(*Call, Ctx);
  llvm::SmallVector<const Expr *, 4> Guards;
  LoopInvariance *Found = nullptr;
  for (int Level = 0; L && Level < 4 && !Found; ++Level) {
    Guards.append(L->Guards.begin(), L->Guards.end());
    LoopInvariance &Inv = Loops.get(*L->Loop, Ctx);
    bool Same = sameEachIteration(Recv, *L->Loop, Inv, Ctx) &&
                llvm::all_of(Call->arguments(),
                             [&](const Expr *A) {
                               return Inv.isInvariant(A) ||
                                      sameEachIteration(ignoreConversions(A),
                                                        *L->Loop, Inv, Ctx);
                             }) &&
                llvm::all_of(Guards, [&](const Expr *G) {
                  return G && Inv.isInvariant(G);
                });
    if (Same && !resultMutated(*Call, Inv, Ctx)) {
      Found = &Inv;
      break;
    }
    L = Loops.enclosingLoop(*L->Loop, Ctx);
  }
  if (!Found)
    return;

  CopyTarget T = describeCopy(*Call, Ctx);
  if (!T.changesDevice() && !T.changesDType() && !T.LikeOther)
    return; // to(options) with neither: returns self, copies nothing
  diag(Call->getExprLoc(), "'%0' is copied %1 on every iteration of this loop, "
                           "yet neither it nor the "
                           "target changes in the loop: every byte%2 is copied "
                           "again each time; hoist the "
                           "copy before the loop and reuse the result")
      << receiverName(Recv, Ctx) << describeDestination(T)
      << knownSize(Recv, Ctx);
  diag(L->Loop->getBeginLoc(), "loop starts here", DiagnosticIDs::Note);
}

} // namespace clang::tidy::devcopy
