#include "RedundantChainCheck.h"
#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
bool isKnownDevice(DeviceKind K) {
  return K == DeviceKind::CPU || K == DeviceKind::CUDA || K == DeviceKind::Other;
}

/// `to(X)` with X written as a Device or DeviceType (what to(Device, ScalarType) takes).
const Expr *singleDeviceArg(const CXXMemberCallExpr &C, const CopyTarget &T) {
  if (T.Method != "to" || writtenArgs(C) != 1 || !T.changesDevice() || T.changesDType())
    return nullptr;
  const Expr *A = ignoreConversions(C.getArg(0));
  QualType QT = A->getType().getNonReferenceType().getCanonicalType();
  const auto *TD = QT->getAsTagDecl();
  if (!TD || !TD->getIdentifier() || (TD->getName() != "Device" && TD->getName() != "DeviceType"))
    return nullptr;
  return A;
}

const Expr *singleDTypeArg(const CXXMemberCallExpr &C, const CopyTarget &T) {
  if (T.Method != "to" || writtenArgs(C) != 1 || T.changesDevice() || !T.changesDType())
    return nullptr;
  const Expr *A = ignoreConversions(C.getArg(0));
  const auto *TD = A->getType().getNonReferenceType().getCanonicalType()->getAsTagDecl();
  return TD && TD->getIdentifier() && TD->getName() == "ScalarType" ? A : nullptr;
}

bool inMacro(const Expr &E) {
  return E.getBeginLoc().isMacroID() || E.getEndLoc().isMacroID();
}
} // namespace

void RedundantChainCheck::registerCheckMatchers(MatchFinder *Finder) {
  // One copy fed straight into another.
  Finder->addMatcher(
      expr(matchers::copyCall("outer"),
           cxxMemberCallExpr(on(ignoringImplicit(matchers::copyCall("inner"))))),
      this);
  // dst.copy_(src.to(d)): copy_ converts device and dtype itself.
  Finder->addMatcher(expr(matchers::tensorMethodCall({"copy_"}, "sink"),
                          cxxMemberCallExpr(hasArgument(
                              0, ignoringImplicit(matchers::copyCall("inner"))))),
                     this);
}

void RedundantChainCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  const auto *Inner = Result.Nodes.getNodeAs<CXXMemberCallExpr>("inner");
  const auto *Recv = Result.Nodes.getNodeAs<Expr>("inner.recv");
  if (!Inner || !Recv)
    return;
  if (const auto *Outer = Result.Nodes.getNodeAs<CXXMemberCallExpr>("outer"))
    checkChain(*Outer, *Inner, *Recv, *Result.Context);
  else
    checkCopyInto(*Inner, *Recv, *Result.Context);
}

void RedundantChainCheck::checkChain(const CXXMemberCallExpr &Outer,
                                     const CXXMemberCallExpr &Inner, const Expr &Recv,
                                     const ASTContext &Ctx) {
  CopyTarget I = describeCopy(Inner, Ctx), O = describeCopy(Outer, Ctx);
  // contiguous/pin_memory after a fresh copy are no-ops or deliberate staging,
  // and a copy "like" another tensor has no target we can compare.
  for (const CopyTarget *T : {&I, &O})
    if (T->Method == "contiguous" || T->Method == "pin_memory" || T->LikeOther)
      return;
  const std::string X = receiverName(&Recv, Ctx);
  const std::string RecvText = sourceText(ignoreConversions(&Recv), Ctx);
  const SourceRange Whole(Outer.getBeginLoc(), Outer.getEndLoc());

  // x.cpu().cuda(): there and back again.
  if (I.changesDevice() && O.changesDevice() && isKnownDevice(I.Device) &&
      isKnownDevice(O.Device) && I.deviceKey() != O.deviceKey()) {
    diag(Inner.getExprLoc(),
         "round trip: '%0' is copied %1 and at once %2; if '%0' already lives on %3 both "
         "copies are wasted, otherwise the first is: copy once with a single 'to()'")
        << X << describeDestination(I) << describeDestination(O) << describeDevice(O);
    return;
  }
  // x.to(d).to(d): the second call finds nothing to change.
  if ((I.changesDevice() || I.changesDType()) && I.deviceKey() == O.deviceKey() &&
      I.DTypeText == O.DTypeText && !O.AlwaysCopies) {
    auto D = diag(Outer.getExprLoc(),
                  "'%0' is sent %1 twice in a row; the second '%2()' does nothing: remove it")
             << X << describeDestination(O) << O.Method;
    if (!inMacro(Outer))
      D << FixItHint::CreateReplacement(Whole, sourceText(&Inner, Ctx));
    return;
  }
  // x.clone().to(d) / x.to(d).clone(): one call with copy=true does both.
  if (I.AlwaysCopies || O.AlwaysCopies) {
    const CXXMemberCallExpr &Move = I.AlwaysCopies ? Outer : Inner;
    const CopyTarget &M = I.AlwaysCopies ? O : I;
    auto D = diag(Inner.getExprLoc(),
                  "'%0' is copied twice: '%1()' then '%2()' makes a copy that is thrown away at "
                  "once; one 'to(..., /*non_blocking=*/false, /*copy=*/true)' gives a fresh "
                  "tensor %3 in a single copy")
             << X << I.Method << O.Method << describeDestination(M);
    if (M.Method == "to" && writtenArgs(Move) == 1 && !inMacro(Outer))
      D << FixItHint::CreateReplacement(
          Whole, RecvText + ".to(" + sourceText(Move.getArg(0), Ctx) +
                     ", /*non_blocking=*/false, /*copy=*/true)");
    return;
  }
  // x.to(d).to(kHalf): two copies where to(d, kHalf) makes one.
  const bool DevThenType = I.changesDevice() && !I.changesDType() && O.changesDType() &&
                           !O.changesDevice();
  const bool TypeThenDev = I.changesDType() && !I.changesDevice() && O.changesDevice() &&
                           !O.changesDType();
  if (DevThenType || TypeThenDev) {
    const CopyTarget &Dev = DevThenType ? I : O, &Type = DevThenType ? O : I;
    auto D = diag(Inner.getExprLoc(),
                  "'%0' is copied twice, %1 and then %2: the intermediate tensor is thrown "
                  "away; convert in one copy with 'to(%3, %4)'")
             << X << describeDestination(I) << describeDestination(O) << Dev.DeviceText
             << Type.DTypeText;
    const Expr *DevArg = singleDeviceArg(DevThenType ? Inner : Outer, Dev);
    const Expr *TypeArg = singleDTypeArg(DevThenType ? Outer : Inner, Type);
    if (DevArg && TypeArg && !inMacro(Outer))
      D << FixItHint::CreateReplacement(Whole, RecvText + ".to(" + sourceText(DevArg, Ctx) +
                                                   ", " + sourceText(TypeArg, Ctx) + ")");
  }
}

void RedundantChainCheck::checkCopyInto(const CXXMemberCallExpr &Inner, const Expr &Recv,
                                        const ASTContext &Ctx) {
  CopyTarget I = describeCopy(Inner, Ctx);
  if (I.Method == "pin_memory" || I.Method == "contiguous")
    return; // pinned staging for an async copy_ is deliberate
  const std::string X = receiverName(&Recv, Ctx);
  auto D = diag(Inner.getExprLoc(),
                "'%0' is copied %1 only to feed 'copy_()', which converts "
                "device and dtype itself: the temporary is a wasted copy; pass '%0' directly")
           << X << describeDestination(I);
  if (!I.NonBlocking && !inMacro(Inner))
    D << FixItHint::CreateReplacement(SourceRange(Inner.getBeginLoc(), Inner.getEndLoc()),
                                      sourceText(ignoreConversions(&Recv), Ctx));
}

} // namespace clang::tidy::devcopy
