#include "DiscardedCopyCheck.h"
#include "analysis/DiscardedValue.h"
#include "analysis/SafeFixes.h"
#include "analysis/TorchMatchers.h"
#include "clang/AST/ASTContext.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
// Set by Sema on the first DeclRefExpr naming the variable: a local that is
// never referenced needs no body walk.
AST_MATCHER(VarDecl, isNeverReferenced) {
  return !Node.isReferenced() && !Node.hasAttr<UnusedAttr>();
}

/// Returns a new tensor (by value) and is not an in-place `*_` op: calling
/// it for its effect does nothing.
bool returnsNewTensor(const FunctionDecl &FD) {
  QualType R = FD.getReturnType();
  return FD.getIdentifier() && !FD.getName().ends_with("_") &&
         !R->isReferenceType() && isTensorType(R);
}
AST_MATCHER(CXXMethodDecl, isNewTensorMethod) {
  return isTensorRecord(Node.getParent()) && returnsNewTensor(Node);
}
/// A LibTorch function outside torch::nn (whose functional forms may take
/// an `inplace` option) that returns a new tensor.
AST_MATCHER(FunctionDecl, isNewTensorFunction) {
  if (llvm::isa<CXXMethodDecl>(Node) || !isTorchFunction(&Node) ||
      !returnsNewTensor(Node))
    return false;
  for (const DeclContext *DC = Node.getDeclContext(); DC; DC = DC->getParent())
    if (const auto *NS = llvm::dyn_cast<NamespaceDecl>(DC);
        NS && NS->getName() == "nn")
      return false;
  return true;
}

/// The in-place form `Name_` of a method or function, when one takes the
/// arguments written.
const FunctionDecl *inPlaceForm(const FunctionDecl &FD, unsigned Args,
                                ASTContext &Ctx) {
  const DeclContext *DC =
      FD.getDeclContext()->getRedeclContext()->getPrimaryContext();
  for (const NamedDecl *ND :
       DC->lookup(&Ctx.Idents.get((FD.getName() + "_").str())))
    if (const auto *F = llvm::dyn_cast<FunctionDecl>(ND->getUnderlyingDecl());
        F && F->getMinRequiredArguments() <= Args && Args <= F->getNumParams())
      return F;
  return nullptr;
}
} // namespace

void DiscardedCopyCheck::registerCheckMatchers(MatchFinder *Finder) {
  // The call's value is dropped where it stands (DiscardedValue.h).
  // `(void)x.to(d)` says the discard is intended.
  auto Discarded =
      anyOf(matchers::copyCall("copy"),
            cxxMemberCallExpr(callee(cxxMethodDecl(isNewTensorMethod())),
                              on(expr().bind("op.recv")))
                .bind("op"),
            callExpr(callee(functionDecl(isNewTensorFunction())),
                     hasArgument(0, matchers::tensorExpr()),
                     unless(cxxMemberCallExpr()), unless(cxxOperatorCallExpr()))
                .bind("op"));
  // A read of item() as a statement: the host waits for a value it drops.
  auto DroppedRead =
      cxxMemberCallExpr(
          callee(cxxMethodDecl(hasName("item"),
                               ofClass(matchers::tensorRecord()))),
          on(expr().bind("read.recv")))
          .bind("read");
  // `(a * b);`: arithmetic on tensors whose result is dropped.
  auto Arith =
      cxxOperatorCallExpr(hasAnyOverloadedOperatorName("+", "-", "*", "/"),
                          hasType(cxxRecordDecl(matchers::tensorRecord())),
                          hasAnyArgument(matchers::tensorExpr()))
          .bind("arith");
  Finder->addMatcher(
      expr(anyOf(Discarded, DroppedRead, Arith), matchers::discardedValue()),
      this);
  // A copy made only to read its options (`x.to(torch::kLong).options()`);
  // a fresh factory's is devcopy-create-then-move's.
  Finder->addMatcher(
      cxxMemberCallExpr(
          callee(cxxMethodDecl(hasAnyName("options", "dtype", "scalar_type"),
                               ofClass(matchers::tensorRecord()))),
          on(ignoringImplicit(matchers::copyCall("copy"))))
          .bind("optread"),
      this);
  // A local initialised from a copy that nothing ever reads.
  Finder->addMatcher(
      varDecl(hasLocalStorage(), unless(parmVarDecl()), isNeverReferenced(),
              unless(isInstantiated()),
              hasInitializer(ignoringImplicit(matchers::copyCall("copy"))))
          .bind("var"),
      this);
}

void DiscardedCopyCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  if (const auto *Op = Result.Nodes.getNodeAs<CallExpr>("op")) {
    checkDiscardedOp(*Op, Result.Nodes.getNodeAs<Expr>("op.recv"),
                     *Result.Context);
    return;
  }
  ASTContext &Ctx = *Result.Context;
  if (const auto *Arith =
          Result.Nodes.getNodeAs<CXXOperatorCallExpr>("arith")) {
    const char *Op = getOperatorSpelling(Arith->getOperator());
    diag(Arith->getOperatorLoc(),
         "result of '%0' is discarded: it makes a new tensor and drops it at "
         "once, its operands unchanged; use '%0=' or assign the result")
        << Op;
    return;
  }
  if (const auto *Read = Result.Nodes.getNodeAs<CXXMemberCallExpr>("read")) {
    diag(Read->getExprLoc(), "result of 'item()' is discarded: it copies '%0' "
                             "to the host and waits for the "
                             "device, then drops the value; use the value (a "
                             "missing 'return'?) or remove the call")
        << receiverName(Result.Nodes.getNodeAs<Expr>("read.recv"), Ctx);
    return;
  }
  const auto *Call = Result.Nodes.getNodeAs<CXXMemberCallExpr>("copy");
  const auto *Recv = Result.Nodes.getNodeAs<Expr>("copy.recv");
  if (!Call || !Recv || Call->getBeginLoc().isInvalid())
    return;
  CopyTarget T = describeCopy(*Call, Ctx);
  std::string Name = receiverName(Recv, Ctx);
  if (const auto *Read = Result.Nodes.getNodeAs<CXXMemberCallExpr>("optread")) {
    checkOptionsRead(*Read, *Call, *Recv, T, Ctx);
    return;
  }
  std::string Where = describeDestination(T);
  // contiguous() copies only a non-contiguous tensor; say so, not "every byte".
  std::string What = T.Method == "contiguous"
                         ? "'" + Name + "' (when not contiguous)"
                         : "every byte of '" + Name + "'";

  if (const auto *Var = Result.Nodes.getNodeAs<VarDecl>("var")) {
    diag(Var->getLocation(), "'%0' holds a copy of %1 %2 and is never read: "
                             "the copy is wasted; use '%0' "
                             "or remove it")
        << Var->getName() << What << Where;
    return;
  }
  std::string Extra = T.NonBlocking && T.Device == DeviceKind::CPU
                          ? "; a non-blocking copy to the CPU also keeps a "
                            "pinned host buffer cached"
                          : "";
  auto D = diag(Call->getBeginLoc(), "result of '%0()' is discarded: %1 is "
                                     "copied %2 and the copy is dropped at "
                                     "once, '%3' itself is unchanged%4; assign "
                                     "the result or remove the call")
           << T.Method << What << Where << Name << Extra;
  // Module-like intent `x.to(d);` means `x = x.to(d);`.
  if (const Expr *Target = assignableReceiver(Recv, Ctx);
      Target && !Call->getBeginLoc().isMacroID())
    D << FixItHint::CreateInsertion(Call->getBeginLoc(),
                                    sourceText(Target, Ctx) + " = ");
}

void DiscardedCopyCheck::checkOptionsRead(const CXXMemberCallExpr &Read,
                                          const CXXMemberCallExpr &Copy,
                                          const Expr &Recv, const CopyTarget &T,
                                          ASTContext &Ctx) {
  // A factory's own tensor: devcopy-create-then-move reports it.
  const Expr *Root = &Recv;
  while (const auto *MC = dyn_cast<CXXMemberCallExpr>(Root->IgnoreImplicit()))
    Root = MC->getImplicitObjectArgument();
  if (const auto *C = dyn_cast<CallExpr>(Root->IgnoreImplicit());
      C && isTensorFactory(C->getDirectCallee()))
    return;
  if (!T.changesDevice() && !T.changesDType() && !T.AlwaysCopies)
    return; // returns the tensor itself
  // `x.clone().to(kLong).options()`: the options of `x` say the same.
  const Expr *Base = &Recv;
  while (const auto *MC = dyn_cast<CXXMemberCallExpr>(Base->IgnoreImplicit())) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    if (!MD || !MD->getIdentifier() ||
        !llvm::is_contained({"clone", "contiguous"}, MD->getName()))
      break;
    Base = MC->getImplicitObjectArgument();
  }
  const std::string Name = receiverName(Base, Ctx);
  const std::string Method = Read.getMethodDecl()->getName().str();
  auto D = diag(Copy.getExprLoc(),
                "'%0()' copies every byte of '%1' %2 only to read its %3() and "
                "drops the "
                "copy; read '%1.options()' and set the dtype or device there")
           << T.Method << Name << describeDestination(T) << Method;
  // x.to(torch::kLong).options() -> x.options().dtype(torch::kLong)
  if (Method == "options" && T.Method == "to" && writtenArgs(Copy) == 1 &&
      T.changesDType() && !T.changesDevice() &&
      !Read.getBeginLoc().isMacroID() && !Read.getEndLoc().isMacroID())
    addSafeFixes(
        D,
        {FixItHint::CreateReplacement(
            SourceRange(Read.getBeginLoc(), Read.getEndLoc()),
            sourceText(ignoreConversions(Base), Ctx) + ".options().dtype(" +
                sourceText(ignoreConversions(Copy.getArg(0)), Ctx) + ")")},
        Ctx);
}

void DiscardedCopyCheck::checkDiscardedOp(const CallExpr &Op, const Expr *Recv,
                                          ASTContext &Ctx) {
  const FunctionDecl *FD = Op.getDirectCallee();
  if (!FD || Op.getBeginLoc().isInvalid())
    return;
  // A method's receiver, or a function's first tensor argument.
  const Expr *Input = Recv ? Recv : Op.getArg(0);
  const FunctionDecl *InPlace = inPlaceForm(*FD, writtenArgs(Op), Ctx);
  std::string Name = FD->getName().str();
  auto D =
      diag(Op.getBeginLoc(), "result of '%0()' is discarded: it makes a new "
                             "tensor and drops it at once, "
                             "'%1' itself is unchanged; %2")
      << Name << receiverName(Input, Ctx)
      << (InPlace ? "use the in-place '" + Name + "_()' or assign the result"
                  : std::string("assign the result or remove the call"));
  // The name token: `x.clamp(...)`, `torch::relu(...)`.
  SourceLocation NameLoc;
  if (const auto *ME = dyn_cast<MemberExpr>(Op.getCallee()->IgnoreImpCasts()))
    NameLoc = ME->getMemberLoc();
  else if (const auto *DRE =
               dyn_cast<DeclRefExpr>(Op.getCallee()->IgnoreImpCasts()))
    NameLoc = DRE->getLocation();
  if (InPlace && NameLoc.isValid() && !NameLoc.isMacroID())
    D << FixItHint::CreateInsertion(NameLoc.getLocWithOffset(Name.size()), "_");
}

} // namespace clang::tidy::devcopy
