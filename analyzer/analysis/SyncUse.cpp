#include "SyncUse.h"
#include "CallSyncs.h"
#include "TorchMatchers.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/StmtCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

namespace clang::tidy::devcopy {

ValueUse combine(const ValueUse &A, const ValueUse &B) {
  return static_cast<int>(A.Kind) >= static_cast<int>(B.Kind) ? A : B;
}

namespace {

bool inStd(const FunctionDecl *FD) {
  return FD->isInStdNamespace() || FD->getDeclContext()->isTranslationUnit();
}

bool isPrintFunction(llvm::StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("printf", "fprintf", "sprintf", "snprintf", "puts", "fputs",
             "fwrite", true)
      .Default(false);
}

/// Methods that store a value into a host container.
bool isStoreMethod(llvm::StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("push_back", "emplace_back", "push_front", "emplace_front",
             "insert", true)
      .Cases("emplace", "push", "append", "assign", "insert_or_assign",
             "try_emplace", true)
      .Default(false);
}

/// A method whose class is, or derives from, a class named Optimizer.
bool isOptimizerMethod(const CXXMethodDecl *MD) {
  llvm::SmallVector<const CXXRecordDecl *, 4> Work{MD->getParent()};
  for (int Steps = 0; !Work.empty() && Steps < 32; ++Steps) {
    const CXXRecordDecl *RD = Work.pop_back_val();
    if (RD->getIdentifier() && RD->getName() == "Optimizer")
      return true;
    if (!(RD = RD->getDefinition()))
      continue;
    for (const CXXBaseSpecifier &B : RD->bases())
      if (const auto *Base = B.getType()->getAsCXXRecordDecl())
        Work.push_back(Base);
  }
  return false;
}

} // namespace

ValueUse SyncUses::classify(const Expr *Read) { return fromExpr(Read, 0); }

ValueUse SyncUses::fromVar(const VarDecl *VD, unsigned Depth) {
  if (!VD->hasLocalStorage())
    return {UseKind::Needed, ""}; // a global or static: read elsewhere
  if (auto It = Vars.find(VD); It != Vars.end())
    return It->second;
  Vars[VD] = {UseKind::Dropped, ""}; // while in progress
  ValueUse Use;
  for (const DeclRefExpr *Ref : Inv.refsTo(VD)) {
    // A write to the variable is not a use of its value.
    auto Parents = Ctx.getParents(*Ref);
    if (!Parents.empty()) {
      if (const auto *BO = Parents[0].get<BinaryOperator>();
          BO && BO->isAssignmentOp() && BO->getLHS()->IgnoreParens() == Ref)
        continue;
      if (const auto *Op = Parents[0].get<CXXOperatorCallExpr>();
          Op && Op->isAssignmentOp() &&
          Op->getArg(0)->IgnoreParenImpCasts() == Ref)
        continue;
    }
    Use = combine(Use, fromExpr(Ref, Depth + 1));
    if (Use.Kind == UseKind::Needed)
      break;
  }
  Vars[VD] = Use;
  return Use;
}

ValueUse SyncUses::fromCall(const CallExpr *Call, const Expr *Arg,
                            unsigned Depth) {
  const FunctionDecl *FD = Call->getDirectCallee();
  if (!FD)
    return {UseKind::Output, ""};
  llvm::StringRef Name = FD->getIdentifier() ? FD->getName() : "";
  if (isPrintFunction(Name))
    return {UseKind::Output, ""};
  if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(Call)) {
    const Expr *Obj = MC->getImplicitObjectArgument();
    if (Obj && Obj->IgnoreParenImpCasts() == Arg->IgnoreParenImpCasts())
      // A method of the value itself: Scalar::toFloat(), a host tensor's
      // item(), data_ptr(), accessor(): the host reads what it holds.
      return isTensorType(Obj->getType()) && !isTensorType(Call->getType()) &&
                     !(Name == "item" || Name.starts_with("is_") ||
                       Name == "equal")
                 ? ValueUse{UseKind::Needed, ""}
                 : fromExpr(Call, Depth);
    if (isStoreMethod(Name)) {
      // A number kept in a local container that only code after the loop
      // reads (the epoch's losses for their mean): the tensors could be
      // kept instead and copied once. A tensor copied to the host as it
      // comes (`outs.push_back(y.cpu())`) frees the device for the next.
      if (!isTensorType(Arg->getType()) && keptForAfterLoop(Obj))
        return {UseKind::Accumulated, receiverName(Obj, Ctx), false, true};
      // A result of each sample, or a log of each training step (reported
      // like output, in training loops only).
      return {UseKind::Output, ""};
    }
  }
  // Handed back to a LibTorch op (`x.clamp(t[k].item<float>(), hi)`): the
  // value could have stayed on the device.
  if (isTensorType(FD->getReturnType()))
    return {UseKind::Dropped, ""};
  // Computing from it (std::max, std::to_string, a user function returning a
  // number): what matters is how that result is used. Other calls consume it
  // (a progress bar, a logger, a writer).
  QualType Ret = FD->getReturnType();
  if (!Ret->isVoidType() && (inStd(FD) || Ret->isArithmeticType()))
    return fromExpr(Call, Depth);
  return {UseKind::Output, ""};
}

ValueUse SyncUses::fromExpr(const Expr *E, unsigned Depth) {
  if (Depth > 6)
    return {UseKind::Needed, ""}; // too far to follow: assume the host needs it
  DynTypedNode Cur = DynTypedNode::create(*E);
  for (int Steps = 0; Steps < 64; ++Steps) {
    auto Parents = Ctx.getParents(Cur);
    if (Parents.empty())
      return {UseKind::Dropped, ""};
    const DynTypedNode &P = Parents[0];
    const Expr *Child = Cur.get<Expr>();
    if (const auto *VD = P.get<VarDecl>())
      return fromVar(VD, Depth);
    const auto *S = P.get<Stmt>();
    if (!S)
      return {UseKind::Needed, ""}; // a field initializer, a default argument
    if (llvm::isa<ReturnStmt>(S))
      return {UseKind::Needed, "", /*Returned=*/true};
    if (llvm::isa<CXXThrowExpr>(S))
      return {UseKind::Needed, ""};
    if (const auto *If = llvm::dyn_cast<IfStmt>(S))
      return {If->getCond() == Child ? UseKind::Needed : UseKind::Dropped, ""};
    if (const auto *W = llvm::dyn_cast<WhileStmt>(S))
      return {W->getCond() == Child ? UseKind::Needed : UseKind::Dropped, ""};
    if (const auto *D = llvm::dyn_cast<DoStmt>(S))
      return {D->getCond() == Child ? UseKind::Needed : UseKind::Dropped, ""};
    if (const auto *F = llvm::dyn_cast<ForStmt>(S))
      return {F->getCond() == Child ? UseKind::Needed : UseKind::Dropped, ""};
    if (llvm::isa<SwitchStmt>(S))
      return {UseKind::Needed, ""};
    if (!llvm::isa<Expr>(S))
      return {UseKind::Dropped, ""};
    if (const auto *CO = llvm::dyn_cast<AbstractConditionalOperator>(S)) {
      if (CO->getCond()->IgnoreParenImpCasts() == Child->IgnoreParenImpCasts())
        return {UseKind::Needed, ""};
    } else if (const auto *BO = llvm::dyn_cast<BinaryOperator>(S)) {
      if (BO->isLogicalOp())
        return {UseKind::Needed, ""};
      if (BO->isAssignmentOp() && BO->getRHS() == Child) {
        const Expr *LHS = BO->getLHS()->IgnoreParenImpCasts();
        const auto *Ref = llvm::dyn_cast<DeclRefExpr>(LHS);
        const auto *VD =
            Ref ? llvm::dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
        if (!VD)
          return {UseKind::Needed, ""}; // stored into a field or an element
        ValueUse Later = fromVar(VD, Depth);
        if (BO->isCompoundAssignmentOp() && Later.Kind != UseKind::Needed)
          return {UseKind::Accumulated, VD->getNameAsString()};
        return Later;
      }
    } else if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(S)) {
      OverloadedOperatorKind K = Op->getOperator();
      bool IsRHS = Op->getNumArgs() == 2 && Op->getArg(1) == Child;
      if (K == OO_LessLess && IsRHS && !isTensorType(Op->getArg(0)->getType()))
        return {UseKind::Output, ""};
      if (K == OO_Subscript && IsRHS)
        return {UseKind::Needed, ""}; // an index
      if (Op->isAssignmentOp() && IsRHS && Places &&
          isTensorType(Op->getArg(0)->getType()) && !Op->getArg(0)->isLValue())
        // Written into a tensor's elements (`t[i][k] = v`: a view, not a
        // variable, whose assignment rebinds the handle): host results only
        // when that tensor is on the host; else the value goes back to the
        // device.
        return {Places->ofTensor(Op->getArg(0)) == Place::Host
                    ? UseKind::Needed
                    : UseKind::Dropped,
                ""};
      if (Op->isAssignmentOp() && IsRHS) {
        const auto *Ref =
            llvm::dyn_cast<DeclRefExpr>(Op->getArg(0)->IgnoreParenImpCasts());
        const auto *VD =
            Ref ? llvm::dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
        if (!VD)
          return {UseKind::Needed, ""};
        ValueUse Later = fromVar(VD, Depth);
        if (K != OO_Equal && Later.Kind != UseKind::Needed)
          return {UseKind::Accumulated, VD->getNameAsString()};
        return Later;
      }
      if (K == OO_AmpAmp || K == OO_PipePipe || K == OO_Exclaim)
        return {UseKind::Needed, ""};
      if (K == OO_Call)
        return {UseKind::Output, ""};
    } else if (const auto *AS = llvm::dyn_cast<ArraySubscriptExpr>(S)) {
      if (AS->getIdx() == Child)
        return {UseKind::Needed, ""};
    } else if (const auto *Call = llvm::dyn_cast<CallExpr>(S)) {
      if (Call->getCallee() != Child)
        return fromCall(Call, Child, Depth);
    } else if (const auto *ME = llvm::dyn_cast<MemberExpr>(S)) {
      // The value's own method: climb to the call.
      auto Up = Ctx.getParents(*ME);
      if (const auto *MC =
              Up.empty() ? nullptr : Up[0].get<CXXMemberCallExpr>())
        return fromCall(MC, Child, Depth);
      return {UseKind::Needed, ""};
    } else if (const auto *UO = llvm::dyn_cast<UnaryOperator>(S)) {
      if (UO->getOpcode() == UO_LNot)
        return {UseKind::Needed, ""};
      if (UO->getOpcode() == UO_AddrOf)
        return {UseKind::Needed, ""};
    } else if (const auto *CE = llvm::dyn_cast<CXXConstructExpr>(S);
               CE && llvm::count_if(CE->arguments(), [](const Expr *A) {
                       return !llvm::isa<CXXDefaultArgExpr>(A);
                     }) > 1) {
      return {UseKind::Needed, ""}; // builds a host object from several values
    }
    // Arithmetic, casts, comparisons, temporaries, braced lists: the value
    // flows on.
    Cur = P;
  }
  return {UseKind::Needed, ""};
}

bool SyncUses::keptForAfterLoop(const Expr *Container) {
  const auto *Ref =
      Container ? llvm::dyn_cast<DeclRefExpr>(Container->IgnoreParenImpCasts())
                : nullptr;
  const auto *VD = Ref ? llvm::dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  if (!VD || llvm::isa<ParmVarDecl>(VD) || !VD->hasLocalStorage() ||
      VD->getType()->isReferenceType() || VD->getType()->isPointerType())
    return false;
  // Declared outside the loop: a container made per iteration is per sample.
  if (Loop.getSourceRange().fullyContains(VD->getSourceRange()))
    return false;
  // In the loop, only filled.
  for (const DeclRefExpr *R : Inv.refsTo(VD)) {
    auto Up = Ctx.getParents(*R);
    const auto *ME = Up.empty() ? nullptr : Up[0].get<MemberExpr>();
    const auto *MD =
        ME ? llvm::dyn_cast<CXXMethodDecl>(ME->getMemberDecl()) : nullptr;
    if (!MD || !MD->getIdentifier() || !isStoreMethod(MD->getName()))
      return false;
  }
  // Not the function's result (host results for the caller), nor captured
  // by reference into something that outlives it.
  const DeclContext *DC = VD->getDeclContext();
  const auto *Fn = llvm::dyn_cast<FunctionDecl>(DC);
  if (!Fn || !Fn->getBody())
    return false;
  using namespace ast_matchers;
  auto Escapes = stmt(
      anyOf(returnStmt(hasDescendant(declRefExpr(to(varDecl(equalsNode(VD)))))),
            lambdaExpr(hasAnyCapture(capturesVar(varDecl(equalsNode(VD)))))));
  return match(findAll(Escapes.bind("e")), *Fn->getBody(), Ctx).empty();
}

namespace {
/// backward() on a tensor, or step()/zero_grad() on an optimizer.
ast_matchers::internal::Matcher<Stmt> trainingStep() {
  using namespace ast_matchers;
  return cxxMemberCallExpr(
             anyOf(callee(cxxMethodDecl(hasName("backward"),
                                        ofClass(matchers::tensorRecord()))),
                   callee(cxxMethodDecl(hasAnyName("step", "zero_grad")))))
      .bind("step");
}

bool isTrainingStep(const CXXMemberCallExpr &Call) {
  return Call.getMethodDecl()->getName() == "backward" ||
         isOptimizerMethod(Call.getMethodDecl());
}

/// A function of the user's (CallSyncs::userDefinition) that runs a training
/// step, itself or through the functions it calls, \p Depth levels down at
/// most.
bool trains(const FunctionDecl *FD, ASTContext &Ctx, unsigned Depth) {
  using namespace ast_matchers;
  const FunctionDecl *Def = CallSyncs::userDefinition(FD, Ctx);
  if (!Def || Depth == 0)
    return false;
  for (const auto &M : match(findAll(trainingStep()), *Def->getBody(), Ctx))
    if (isTrainingStep(*M.getNodeAs<CXXMemberCallExpr>("step")))
      return true;
  for (const auto &M :
       match(findAll(callExpr().bind("call")), *Def->getBody(), Ctx))
    if (trains(M.getNodeAs<CallExpr>("call")->getDirectCallee(), Ctx,
               Depth - 1))
      return true;
  return false;
}
} // namespace

bool SyncUses::isTrainingLoop() {
  if (Training)
    return *Training;
  using namespace ast_matchers;
  Training = false;
  // Steps and calls of the loop itself, not of a nested loop.
  auto Own = [&](const Stmt &S) {
    std::optional<EnclosingLoop> L = findEnclosingLoop(S, Ctx);
    return L && L->Loop == &Loop;
  };
  for (const auto &M : match(findAll(trainingStep()), Loop, Ctx)) {
    const auto *Call = M.getNodeAs<CXXMemberCallExpr>("step");
    if (isTrainingStep(*Call) && Own(*Call))
      return *(Training = true);
  }
  // `loss = train_step(batch)`: the step in a function of this file.
  TrainingFunctions Local;
  TrainingFunctions &Memo = Trains ? *Trains : Local;
  for (const auto &M : match(findAll(callExpr().bind("call")), Loop, Ctx)) {
    const auto *Call = M.getNodeAs<CallExpr>("call");
    const FunctionDecl *FD = Call->getDirectCallee();
    if (!FD || !Own(*Call))
      continue;
    auto [It, New] = Memo.try_emplace(FD, false);
    if (New)
      It->second = trains(FD, Ctx, 2);
    if (It->second)
      return *(Training = true);
  }
  return *Training;
}

} // namespace clang::tidy::devcopy
