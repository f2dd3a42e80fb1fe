#include "RedundantChainCheck.h"
#include "analysis/SafeFixes.h"
#include "analysis/TorchMatchers.h"
#include "clang/AST/ASTContext.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
bool isKnownDevice(DeviceKind K) {
  return K == DeviceKind::CPU || K == DeviceKind::CUDA ||
         K == DeviceKind::Other;
}

/// `to(X)` with X written as a Device or DeviceType (what to(Device,
/// ScalarType) takes).
const Expr *singleDeviceArg(const CXXMemberCallExpr &C, const CopyTarget &T) {
  if (T.Method != "to" || writtenArgs(C) != 1 || !T.changesDevice() ||
      T.changesDType())
    return nullptr;
  const Expr *A = ignoreConversions(C.getArg(0));
  return isDeviceType(A->getType()) ? A : nullptr;
}

const Expr *singleDTypeArg(const CXXMemberCallExpr &C, const CopyTarget &T) {
  if (T.Method != "to" || writtenArgs(C) != 1 || T.changesDevice() ||
      !T.changesDType())
    return nullptr;
  const Expr *A = ignoreConversions(C.getArg(0));
  return isDTypeType(A->getType()) ? A : nullptr;
}

bool inMacro(const Expr &E) {
  return E.getBeginLoc().isMacroID() || E.getEndLoc().isMacroID();
}

/// Where a copy sends its tensor: the CPU is the host, CUDA and other
/// backends an accelerator, a runtime device what TensorPlaces says.
Place destination(const CXXMemberCallExpr &C, const CopyTarget &T,
                  TensorPlaces &Places) {
  if (T.Device == DeviceKind::CPU)
    return Place::Host;
  if (T.Device == DeviceKind::CUDA || T.Device == DeviceKind::Other)
    return Place::Accelerator;
  if (T.Method == "to")
    for (const Expr *A : C.arguments())
      if (!isa<CXXDefaultArgExpr>(A) &&
          (isDeviceType(A->getType()) || isTensorOptionsType(A->getType())))
        return Places.deviceNamedBy(A).value_or(Place::Unknown);
  return Place::Unknown;
}

/// Bytes per element of the tensor \p E, where the source says (a cast, a
/// factory with a dtype); otherwise float's 4, LibTorch's default.
uint64_t elementBytes(const Expr *E, const ASTContext &Ctx) {
  for (int Depth = 0; E && Depth < 8; ++Depth) {
    E = E->IgnoreImplicit();
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *MD = MC->getMethodDecl();
      if (MD && MD->getIdentifier() && isTensorType(MC->getType())) {
        CopyTarget T = describeCopy(*MC, Ctx);
        if (T.changesDType())
          return dtypeSize(T.DTypeText).value_or(4);
        llvm::StringRef N = MD->getName();
        if (N == "half" || N == "bfloat16")
          return 2;
        if (N == "double" || N == "long")
          return 8;
        E = MC->getImplicitObjectArgument();
        continue;
      }
    }
    if (const auto *C = dyn_cast<CallExpr>(E);
        C && isTensorFactory(C->getDirectCallee()))
      for (const Expr *A : C->arguments())
        if (!isa<CXXDefaultArgExpr>(A) && isTensorOptionsType(A->getType()))
          if (CopyTarget O = describeOptions(A, Ctx); O.changesDType())
            return dtypeSize(O.DTypeText).value_or(4);
    break;
  }
  return 4;
}
} // namespace

void RedundantChainCheck::registerCheckMatchers(MatchFinder *Finder) {
  // One copy fed straight into another.
  Finder->addMatcher(expr(matchers::copyCall("outer"),
                          cxxMemberCallExpr(on(
                              ignoringImplicit(matchers::copyCall("inner"))))),
                     this);
  // x.to(d).detach().clone(): detach() shares the copy, clone() copies again.
  Finder->addMatcher(expr(matchers::tensorMethodCall({"clone"}, "outer"),
                          cxxMemberCallExpr(on(ignoringImplicit(expr(
                              matchers::tensorMethodCall({"detach"}, "detach"),
                              cxxMemberCallExpr(on(ignoringImplicit(
                                  matchers::copyCall("inner"))))))))),
                     this);
  // (x.to(d) == 3).cpu(): uploaded to be compared, and the answer downloaded.
  auto Compared = ignoringImplicit(expr(anyOf(
      cxxMemberCallExpr(
          callee(cxxMethodDecl(hasAnyName("eq", "ne", "lt", "gt", "le", "ge"))),
          on(ignoringImplicit(matchers::copyCall("up"))), argumentCountIs(1),
          hasArgument(0, expr().bind("other"))),
      cxxOperatorCallExpr(
          hasAnyOverloadedOperatorName("==", "!=", "<", ">", "<=", ">="),
          hasArgument(0, ignoringImplicit(matchers::copyCall("up"))),
          hasArgument(1, expr().bind("other"))))));
  Finder->addMatcher(expr(matchers::tensorMethodCall({"cpu", "to"}, "down"),
                          cxxMemberCallExpr(on(Compared))),
                     this);
  // dst.copy_(src.to(d)): copy_ converts device and dtype itself.
  Finder->addMatcher(
      expr(matchers::tensorMethodCall({"copy_"}, "sink"),
           cxxMemberCallExpr(
               hasArgument(0, ignoringImplicit(matchers::copyCall("inner"))))),
      this);
}

void RedundantChainCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  if (const auto *Down = Result.Nodes.getNodeAs<CXXMemberCallExpr>("down")) {
    checkCompareTrip(*Down, *Result.Nodes.getNodeAs<CXXMemberCallExpr>("up"),
                     *Result.Nodes.getNodeAs<Expr>("up.recv"),
                     *Result.Nodes.getNodeAs<Expr>("other"), *Result.Context);
    return;
  }
  const auto *Inner = Result.Nodes.getNodeAs<CXXMemberCallExpr>("inner");
  const auto *Recv = Result.Nodes.getNodeAs<Expr>("inner.recv");
  if (!Inner || !Recv)
    return;
  if (const auto *Outer = Result.Nodes.getNodeAs<CXXMemberCallExpr>("outer"))
    checkChain(*Outer, *Inner, *Recv,
               Result.Nodes.getNodeAs<CXXMemberCallExpr>("detach"),
               *Result.Context);
  else
    checkCopyInto(*Inner, *Recv, *Result.Context);
}

void RedundantChainCheck::checkChain(const CXXMemberCallExpr &Outer,
                                     const CXXMemberCallExpr &Inner,
                                     const Expr &Recv,
                                     const CXXMemberCallExpr *Detach,
                                     ASTContext &Ctx) {
  CopyTarget I = describeCopy(Inner, Ctx), O = describeCopy(Outer, Ctx);
  // contiguous/pin_memory after a fresh copy are no-ops or deliberate staging,
  // and a copy "like" another tensor has no target we can compare.
  for (const CopyTarget *T : {&I, &O})
    if (T->Method == "contiguous" || T->Method == "pin_memory" || T->LikeOther)
      return;
  const std::string X = receiverName(&Recv, Ctx);
  const std::string RecvText = sourceText(ignoreConversions(&Recv), Ctx);
  const SourceRange Whole(Outer.getBeginLoc(), Outer.getEndLoc());
  TensorPlaces &Places = places(Ctx);
  Place From = Places.ofTensor(&Recv);
  // Where the source does not say, code that works with no device at all
  // (neither its file nor its function names or receives one) holds host
  // tensors, as host-sync-in-loop takes them: its 'x.cpu()' copies nothing.
  if (From == Place::Unknown && !devicesInPlay(Ctx).around(Outer, Ctx))
    From = Place::Host;
  const Place InnerTo =
      I.changesDevice() ? destination(Inner, I, Places) : From;
  // The first call moves nothing when 'x' is already where it sends it
  // (x.cpu() on a host tensor returns x): no second copy to save.
  const bool InnerIsNoOp = I.changesDevice() && !I.AlwaysCopies &&
                           !I.changesDType() && From != Place::Unknown &&
                           From == InnerTo;
  if (InnerIsNoOp)
    return;

  // x.cpu().cuda(): there and back again.
  const Place OuterTo =
      O.changesDevice() ? destination(Outer, O, Places) : InnerTo;
  if (I.changesDevice() && O.changesDevice() &&
      ((isKnownDevice(I.Device) && isKnownDevice(O.Device) &&
        I.deviceKey() != O.deviceKey()) ||
       (InnerTo != Place::Unknown && OuterTo != Place::Unknown &&
        InnerTo != OuterTo))) {
    diag(Inner.getExprLoc(), "round trip: '%0' is copied %1 and at once %2; if "
                             "'%0' already lives on %3 both "
                             "copies are wasted, otherwise the first is: copy "
                             "once with a single 'to()'")
        << X << describeDestination(I) << describeDestination(O)
        << describeDevice(O);
    return;
  }
  // x.to(d).to(d): the second call finds nothing to change.
  if ((I.changesDevice() || I.changesDType()) &&
      I.deviceKey() == O.deviceKey() && I.DTypeText == O.DTypeText &&
      !O.AlwaysCopies) {
    auto D = diag(Outer.getExprLoc(), "'%0' is sent %1 twice in a row; the "
                                      "second '%2()' does nothing: remove it")
             << X << describeDestination(O) << O.Method;
    if (!inMacro(Outer))
      addSafeFixes(
          D, {FixItHint::CreateReplacement(Whole, sourceText(&Inner, Ctx))},
          Ctx);
    return;
  }
  // x.clone().to(d) / x.to(d).clone(): one call with copy=true does both.
  if (I.AlwaysCopies || O.AlwaysCopies) {
    const CXXMemberCallExpr &Move = I.AlwaysCopies ? Outer : Inner;
    const CopyTarget &M = I.AlwaysCopies ? O : I;
    if (M.AlwaysCopies)
      return; // clone().clone(): another rule's business
    auto D = diag(Inner.getExprLoc(),
                  "'%0' is copied twice: '%1()'%4 then '%2()' makes a copy "
                  "that is thrown away "
                  "at once; one 'to(..., /*non_blocking=*/false, "
                  "/*copy=*/true)' gives a fresh "
                  "tensor %3 in a single copy")
             << X << I.Method << O.Method << describeDestination(M)
             << (Detach ? std::string(" and 'detach()'") : std::string());
    if (M.Method == "to" && writtenArgs(Move) == 1 && !inMacro(Outer))
      addSafeFixes(
          D,
          {FixItHint::CreateReplacement(
              Whole, RecvText + ".to(" + sourceText(Move.getArg(0), Ctx) +
                         ", /*non_blocking=*/false, /*copy=*/true)" +
                         (Detach ? ".detach()" : ""))},
          Ctx);
    return;
  }
  if (Detach)
    return;
  // x.to(d).to(kHalf): the full-width tensor crosses, then shrinks; one
  // to(d, kHalf) converts first and moves fewer bytes. A cast before the
  // move (x.to(kU8).cpu()) is already that order, and a widening cast after
  // it (x.cpu().to(kDouble)) is the cheaper order: neither is flagged.
  const bool DevThenType = I.changesDevice() && !I.changesDType() &&
                           O.changesDType() && !O.changesDevice();
  if (!DevThenType)
    return;
  std::optional<uint64_t> ToSize = dtypeSize(O.DTypeText);
  const uint64_t FromSize = elementBytes(&Recv, Ctx);
  if (!ToSize || *ToSize >= FromSize)
    return;
  auto D = diag(Inner.getExprLoc(), "'%0' is copied %1 at %5 bytes per element "
                                    "and then converted to %2 (%6): "
                                    "converting first moves %7x fewer bytes; "
                                    "do both in one copy with 'to(%3, %4)'")
           << X << describeDestination(I) << O.DTypeText << I.DeviceText
           << O.DTypeText << static_cast<unsigned>(FromSize)
           << static_cast<unsigned>(*ToSize)
           << static_cast<unsigned>(FromSize / *ToSize);
  const Expr *DevArg = singleDeviceArg(Inner, I);
  const Expr *TypeArg = singleDTypeArg(Outer, O);
  if (DevArg && TypeArg && !inMacro(Outer))
    addSafeFixes(D,
                 {FixItHint::CreateReplacement(
                     Whole, RecvText + ".to(" + sourceText(DevArg, Ctx) + ", " +
                                sourceText(TypeArg, Ctx) + ")")},
                 Ctx);
}

void RedundantChainCheck::checkCompareTrip(const CXXMemberCallExpr &Down,
                                           const CXXMemberCallExpr &Up,
                                           const Expr &Recv, const Expr &Other,
                                           ASTContext &Ctx) {
  TensorPlaces &Places = places(Ctx);
  CopyTarget U = describeCopy(Up, Ctx), D = describeCopy(Down, Ctx);
  // Up to an accelerator from where 'x' is not, and the answer back down:
  // the host could have compared 'x' where it was.
  if (!U.changesDevice() || U.changesDType() ||
      destination(Up, U, Places) == Place::Host ||
      destination(Down, D, Places) != Place::Host ||
      Places.ofTensor(&Recv) == Place::Accelerator)
    return;
  if (isTensorType(Other.getType()) && Places.ofTensor(&Other) != Place::Host)
    return; // compared with a device tensor: the upload is needed
  diag(Up.getExprLoc(),
       "'%0' is copied %1 only to be compared there and the answer copied "
       "back %2: two transfers and two waits; compare on the host, where "
       "'%0' already is")
      << receiverName(&Recv, Ctx) << describeDestination(U)
      << describeDestination(D);
}

void RedundantChainCheck::checkCopyInto(const CXXMemberCallExpr &Inner,
                                        const Expr &Recv, ASTContext &Ctx) {
  CopyTarget I = describeCopy(Inner, Ctx);
  if (I.Method == "pin_memory" || I.Method == "contiguous")
    return; // pinned staging for an async copy_ is deliberate
  // A move alone copies nothing when 'src' is already there: only a source
  // known to live elsewhere makes the temporary a real copy.
  if (I.changesDevice() && !I.changesDType() && !I.AlwaysCopies) {
    TensorPlaces &Places = places(Ctx);
    const Place From = Places.ofTensor(&Recv);
    const Place To = destination(Inner, I, Places);
    if (From == Place::Unknown || To == Place::Unknown || From == To)
      return;
  }
  const std::string X = receiverName(&Recv, Ctx);
  auto D = diag(Inner.getExprLoc(),
                "'%0' is copied %1 only to feed 'copy_()', which converts "
                "device and dtype itself: the temporary is a wasted copy; pass "
                "'%0' directly")
           << X << describeDestination(I);
  if (!I.NonBlocking && !inMacro(Inner))
    addSafeFixes(D,
                 {FixItHint::CreateReplacement(
                     SourceRange(Inner.getBeginLoc(), Inner.getEndLoc()),
                     sourceText(ignoreConversions(&Recv), Ctx))},
                 Ctx);
}

} // namespace clang::tidy::devcopy
