#include "TensorPlace.h"
#include "Sequence.h"
#include "TensorPlaceDefinitions.h"
#include "TorchMatchers.h"
#include "clang-tidy/utils/ExprSequence.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/Analysis/Analyses/CFGReachabilityAnalysis.h"
#include "clang/Analysis/Analyses/Dominators.h"
#include "clang/Analysis/CFG.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {

/// The first tensor among the arguments (through initializer lists, as in
/// torch::cat({a, b})).
const Expr *firstTensorOperand(const Expr *E, unsigned Depth = 0) {
  if (!E || Depth > 4)
    return nullptr;
  E = ignoreConversions(E);
  if (isTensorType(E->getType()) && !llvm::isa<InitListExpr>(E))
    return E;
  if (const auto *Std = llvm::dyn_cast<CXXStdInitializerListExpr>(E))
    return firstTensorOperand(Std->getSubExpr(), Depth + 1);
  if (const auto *IL = llvm::dyn_cast<InitListExpr>(E)) {
    for (const Expr *Init : IL->inits())
      if (const Expr *T = firstTensorOperand(Init, Depth + 1))
        return T;
    return nullptr;
  }
  if (const auto *CE = llvm::dyn_cast<CXXConstructExpr>(E))
    for (const Expr *A : CE->arguments())
      if (const Expr *T = firstTensorOperand(A, Depth + 1))
        return T;
  return nullptr;
}
} // namespace

llvm::StringRef placeName(Place P) {
  switch (P) {
  case Place::Host:
    return "host";
  case Place::Accelerator:
    return "accelerator";
  default:
    return "unknown";
  }
}

/// The CFG of one function and the analyses built on it, for reaching
/// definitions of its local tensors.
struct TensorPlaces::FunctionFlow {
  std::unique_ptr<CFG> Graph;
  std::unique_ptr<SequenceIndex> Sequence;
  std::unique_ptr<utils::StmtToBlockMap> Blocks;
  std::unique_ptr<CFGDomTree> Dominators;
  std::unique_ptr<CFGReverseBlockReachabilityAnalysis> Reach;
};

TensorPlaces::TensorPlaces(ASTContext &Ctx) : Ctx(Ctx) {}
TensorPlaces::~TensorPlaces() = default;

llvm::SmallVector<Definition, 4> definitions(const VarDecl *VD,
                                             ASTContext &Ctx) {
  llvm::SmallVector<Definition, 4> Defs;
  if (const Expr *Init = VD->getInit())
    Defs.push_back({Init, Init});
  auto Ref = ignoringParenImpCasts(declRefExpr(to(varDecl(equalsNode(VD)))));
  auto DefOrEscape = expr(anyOf(
      cxxOperatorCallExpr(hasOverloadedOperatorName("="), hasArgument(0, Ref),
                          hasArgument(1, expr().bind("value")))
          .bind("def"),
      binaryOperator(isAssignmentOperator(), hasLHS(Ref),
                     hasRHS(expr().bind("value")))
          .bind("def"),
      // Passed to a non-const reference or by address: anything may be stored
      // (std::get only reads an element of a tuple).
      callExpr(unless(callee(functionDecl(hasName("::std::get")))),
               forEachArgumentWithParam(
                   Ref, parmVarDecl(hasType(
                            references(qualType(unless(isConstQualified())))))))
          .bind("escape"),
      unaryOperator(hasOperatorName("&"), hasUnaryOperand(Ref))
          .bind("escape")));
  auto Collect = [&](const llvm::SmallVector<BoundNodes, 1> &Found) {
    for (const BoundNodes &N : Found) {
      if (const auto *Def = N.getNodeAs<Expr>("def"))
        Defs.push_back({Def, N.getNodeAs<Expr>("value")});
      else if (const auto *Esc = N.getNodeAs<Expr>("escape"))
        Defs.push_back({Esc, nullptr});
    }
  };
  if (const auto *FD = llvm::dyn_cast_or_null<FunctionDecl>(
          VD->getParentFunctionOrMethod())) {
    if (FD->getBody())
      Collect(match(stmt(forEachDescendant(DefOrEscape)), *FD->getBody(), Ctx));
    return Defs;
  }
  const SourceManager &SM = Ctx.getSourceManager();
  if (!VD->hasGlobalStorage() ||
      !SM.isInMainFile(SM.getExpansionLoc(VD->getLocation())))
    return Defs;
  for (const Decl *D : Ctx.getTranslationUnitDecl()->decls())
    if (!D->isImplicit() &&
        SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
      Collect(match(decl(forEachDescendant(DefOrEscape)), *D, Ctx));
  return Defs;
}

llvm::ArrayRef<Definition> TensorPlaces::definitionsOf(const VarDecl *VD) {
  auto [It, New] = Definitions.try_emplace(VD);
  if (New) {
    llvm::SmallVector<Definition, 4> Defs = definitions(VD, Ctx);
    It->second.assign(Defs.begin(), Defs.end());
  }
  return It->second;
}

Place TensorPlaces::orProgram(Place P) {
  return P == Place::Unknown && programOnHost() ? Place::Host : P;
}

Place TensorPlaces::ofTensor(const Expr *E) {
  return orProgram(tensorOf(E, 0));
}

TensorPlaces::FunctionFlow *TensorPlaces::flowOf(const FunctionDecl *FD) {
  auto &Slot = Flows[FD];
  if (Slot)
    return Slot->Graph ? Slot.get() : nullptr;
  Slot = std::make_unique<FunctionFlow>();
  CFG::BuildOptions Options;
  Options.AddImplicitDtors = true;
  Options.AddTemporaryDtors = true;
  Slot->Graph = CFG::buildCFG(FD, FD->getBody(), &Ctx, Options);
  if (!Slot->Graph)
    return nullptr;
  Slot->Sequence =
      std::make_unique<SequenceIndex>(Slot->Graph.get(), FD->getBody(), &Ctx);
  Slot->Blocks =
      std::make_unique<utils::StmtToBlockMap>(Slot->Graph.get(), &Ctx);
  Slot->Dominators = std::make_unique<CFGDomTree>(Slot->Graph.get());
  Slot->Reach =
      std::make_unique<CFGReverseBlockReachabilityAnalysis>(*Slot->Graph);
  return Slot.get();
}

Place TensorPlaces::variableTensor(const VarDecl *VD, const Expr *Use,
                                   unsigned Depth) {
  const auto *FD =
      llvm::dyn_cast_or_null<FunctionDecl>(VD->getParentFunctionOrMethod());
  // A parameter holds what the callers pass until the function assigns to
  // it; after that, the reaching definitions tell, the callers' value as one.
  const auto *Param = llvm::dyn_cast<ParmVarDecl>(VD);
  if (Param && !rebound(Param))
    return ofParameter(Param);
  if (!FD || !FD->getBody())
    return Place::Unknown;
  if (!InProgress.insert(VD).second) {
    Cycles.insert(VD);
    CycleUse[VD] = Use;
    return Place::Unknown;
  }
  llvm::ArrayRef<Definition> Defs = definitionsOf(VD);
  FunctionFlow *Flow = flowOf(FD);
  const CFGBlock *UseBlock =
      Flow ? Flow->Blocks->blockContainingStmt(Use) : nullptr;
  auto Contains = [&](const Stmt *Outer, const Stmt *Inner) {
    return encloses(Ctx.getSourceManager(), Outer->getSourceRange(),
                    Inner->getSourceRange());
  };
  // Before the use in the same block, or in a block that reaches it.
  auto Reaches = [&](const Stmt *Def) {
    if (Contains(Def, Use))
      return false; // x = f(x): the use reads the previous value
    const CFGBlock *B = Flow->Blocks->blockContainingStmt(Def);
    if (!B)
      return true;
    if (B == UseBlock)
      return Flow->Sequence->inSequence(Def, Use) ||
             llvm::any_of(B->succs(), [&](const CFGBlock::AdjacentBlock &S) {
               const CFGBlock *Next = S.getReachableBlock(); // a loop back to B
               return Next && (Next == B || Flow->Reach->isReachable(Next, B));
             });
    return Flow->Reach->isReachable(B, UseBlock);
  };
  // Executed on every path to the use, after \p Earlier.
  auto Kills = [&](const Stmt *Def, const Stmt *Earlier) {
    const CFGBlock *B = Flow->Blocks->blockContainingStmt(Def);
    const CFGBlock *E = Flow->Blocks->blockContainingStmt(Earlier);
    if (!B || !E)
      return false;
    bool BeforeUse = B == UseBlock ? Flow->Sequence->inSequence(Def, Use)
                                   : Flow->Dominators->dominates(B, UseBlock);
    bool AfterEarlier = B == E ? Flow->Sequence->inSequence(Earlier, Def)
                               : Flow->Dominators->dominates(E, B);
    return BeforeUse && AfterEarlier;
  };
  llvm::SmallVector<const Definition *, 4> Live;
  for (const Definition &D : Defs)
    if ((!Param || !isDefaultArgument(Param, D)) &&
        (!UseBlock || Reaches(D.At)))
      Live.push_back(&D);
  std::optional<Place> Result;
  const Expr *CyclicRead = nullptr;
  for (const Definition *D : Live) {
    if (UseBlock && llvm::any_of(Live, [&](const Definition *Other) {
          return Other != D && Kills(Other->At, D->At);
        }))
      continue;
    Cycles.erase(VD);
    Place P = D->Value ? tensorOf(D->Value, Depth + 1) : Place::Unknown;
    // `x = op(x)` in a loop: the op keeps x where it is, so the definition
    // adds nothing to the others (an optimistic fixpoint).
    if (P == Place::Unknown && Cycles.erase(VD)) {
      CyclicRead = CycleUse.lookup(VD);
      continue;
    }
    if (P == Place::Unknown && UseBlock && hostByGuard(VD, *D, Live, Depth))
      P = Place::Host;
    Result = !Result || *Result == P ? P : Place::Unknown;
  }
  // The value the parameter came with, unless a definition on every path
  // to the use replaced it.
  if (Param && (!UseBlock || llvm::none_of(Live, [&](const Definition *D) {
        const CFGBlock *B = Flow->Blocks->blockContainingStmt(D->At);
        return B && (B == UseBlock ? Flow->Sequence->inSequence(D->At, Use)
                                   : Flow->Dominators->dominates(B, UseBlock));
      }))) {
    Place P =
        UseBlock && hostByGuard(VD, Definition{nullptr, nullptr}, Live, Depth)
            ? Place::Host
            : ofParameter(Param);
    Result = !Result || *Result == P ? P : Place::Unknown;
  }
  InProgress.erase(VD);
  // Only `x = op(x)` reaches the use: x is where it was before that
  // definition, which its own read of x tells (once per variable, so the
  // cost stays linear).
  if (!Result && CyclicRead && Reentered.insert(VD).second) {
    Result = variableTensor(VD, CyclicRead, Depth + 1);
    Reentered.erase(VD);
  }
  return Result.value_or(Place::Unknown);
}

Place TensorPlaces::tensorOf(const Expr *E, unsigned Depth) {
  if (!E || Depth > MaxPlaceDepth)
    return Place::Unknown;
  E = ignoreConversions(E);
  if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(E)) {
    // `auto [values, indices] = torch::sort(x)`: where the tuple was made.
    if (const auto *BD = llvm::dyn_cast<BindingDecl>(DRE->getDecl())) {
      const auto *DD =
          llvm::dyn_cast_or_null<DecompositionDecl>(BD->getDecomposedDecl());
      return DD && !DD->getType()->isReferenceType()
                 ? tensorOf(DD->getInit(), Depth + 1)
                 : Place::Unknown;
    }
    const auto *VD = llvm::dyn_cast<VarDecl>(DRE->getDecl());
    return VD ? variableTensor(VD, DRE, Depth + 1) : Place::Unknown;
  }
  if (const auto *U = llvm::dyn_cast<UnaryOperator>(E);
      U && U->getOpcode() == UO_Deref)
    return pointeeOf(U->getSubExpr(), Depth + 1);
  if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    const Expr *Recv = MC->getImplicitObjectArgument();
    if (!MD || !MD->getIdentifier() || !Recv)
      return Place::Unknown;
    // dets.at(i), dets.front(): an element of a container of tensors.
    if (isTensorContainerType(Recv->getType()) &&
        llvm::is_contained({"at", "front", "back"}, MD->getName()))
      return elementsOf(Recv, Depth + 1);
    if (isModuleType(Recv->getType()))
      return tensorOf(
          firstTensorOperand(MC->getNumArgs() ? MC->getArg(0) : nullptr),
          Depth + 1);
    // `t->index(...)` through a pointer parameter: where it points.
    const bool Arrow = Recv->getType()->isPointerType() &&
                       isTensorType(Recv->getType()->getPointeeType());
    if (!isTensorType(Recv->getType()) && !Arrow)
      return Place::Unknown;
    llvm::StringRef Name = MD->getName();
    if (Name == "cpu" || Name == "pin_memory")
      return Place::Host;
    if (Name == "cuda")
      return Place::Accelerator;
    if (Name == "to" || Name == "type_as") {
      for (const Expr *Arg : MC->arguments()) {
        if (llvm::isa<CXXDefaultArgExpr>(Arg))
          continue;
        if (isTensorType(Arg->getType()))
          return tensorOf(Arg, Depth + 1);
        if (isDeviceType(Arg->getType()) || isTensorOptionsType(Arg->getType()))
          if (std::optional<Place> P = deviceOf(Arg, Depth + 1))
            return *P;
      }
    }
    // Every other op computes where its receiver lives.
    return Arrow ? pointeeOf(Recv, Depth + 1) : tensorOf(Recv, Depth + 1);
  }
  if (const auto *OC = llvm::dyn_cast<CXXOperatorCallExpr>(E)) {
    // dets[i]: an element of a container of tensors; `*it` in a range-for
    // over one (`auto &&__range = dets; auto __begin = __range.begin();`).
    if (OC->getOperator() == OO_Subscript &&
        isTensorContainerType(OC->getArg(0)->getType()))
      return elementsOf(OC->getArg(0), Depth + 1);
    if (OC->getOperator() == OO_Star && OC->getNumArgs() == 1)
      if (const auto *It =
              llvm::dyn_cast<DeclRefExpr>(ignoreConversions(OC->getArg(0))))
        if (const auto *Begin = llvm::dyn_cast<VarDecl>(It->getDecl());
            Begin && Begin->isImplicit())
          if (const auto *Call = llvm::dyn_cast_or_null<CXXMemberCallExpr>(
                  ignoreConversions(Begin->getInit())))
            return elementsOf(Call->getImplicitObjectArgument(), Depth + 1);
    // Arithmetic, indexing, assignment: the first tensor operand's device;
    // a module called as a function: where its input is.
    for (const Expr *Arg : OC->arguments())
      if (isTensorType(Arg->getType()))
        return tensorOf(Arg, Depth + 1);
    if (OC->getOperator() == OO_Call && OC->getNumArgs() > 1)
      return tensorOf(firstTensorOperand(OC->getArg(1)), Depth + 1);
    return Place::Unknown;
  }
  if (const CallExpr *C = llvm::dyn_cast<CallExpr>(E)) {
    const FunctionDecl *FD = C->getDirectCallee();
    // std::get<1>(torch::sort(x)): a tensor of the tuple an op returned.
    if (FD && FD->isInStdNamespace() && FD->getIdentifier() &&
        FD->getName() == "get" && C->getNumArgs() == 1)
      return tensorOf(C->getArg(0), Depth + 1);
    if (!isTorchFunction(FD))
      return Place::Unknown;
    if (isTensorFactory(FD)) {
      for (const Expr *Arg : C->arguments())
        if (!llvm::isa<CXXDefaultArgExpr>(Arg) &&
            isTensorOptionsType(Arg->getType()))
          if (std::optional<Place> P = deviceOf(Arg, Depth + 1))
            return *P;
      if (FD->getName().ends_with("_like") && C->getNumArgs() > 0)
        return tensorOf(C->getArg(0), Depth + 1);
      return Place::Host; // LibTorch's default device
    }
    if (FD->getIdentifier() && FD->getName() == "from_blob")
      return Place::Host;
    for (const Expr *Arg : C->arguments())
      if (const Expr *T = firstTensorOperand(Arg))
        return tensorOf(T, Depth + 1);
    return Place::Unknown;
  }
  return Place::Unknown;
}

} // namespace clang::tidy::devcopy
