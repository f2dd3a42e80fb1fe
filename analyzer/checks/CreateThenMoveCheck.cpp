#include "CreateThenMoveCheck.h"
#include "analysis/LoopFacts.h"
#include "analysis/Parents.h"
#include "analysis/SafeFixes.h"
#include "analysis/TorchMatchers.h"
#include "clang/AST/ASTContext.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringSwitch.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
/// Index of the factory's TensorOptions parameter, or -1.
int optionsParam(const FunctionDecl &FD) {
  for (unsigned I = 0; I < FD.getNumParams(); ++I)
    if (isTensorOptionsType(FD.getParamDecl(I)->getType()))
      return static_cast<int>(I);
  return -1;
}

/// Casts and views: ops that leave a fresh host tensor a host tensor of the
/// same data, so creating it on the device first changes nothing but where.
/// Also in-place fills from scalars (`ones({1}).fill_(c)`, `mul_(2)`): they
/// run on the device just as well.
bool isCastOrView(const CXXMemberCallExpr &C) {
  const CXXMethodDecl *MD = C.getMethodDecl();
  if (!MD || !MD->getIdentifier() || !isTensorType(C.getType()))
    return false;
  llvm::StringRef N = MD->getName();
  if (MD->getReturnType()->isReferenceType())
    return llvm::is_contained({"fill_", "zero_", "mul_", "add_", "sub_", "div_",
                               "uniform_", "normal_", "clamp_"},
                              N) &&
           llvm::none_of(C.arguments(), [](const Expr *A) {
             return isTensorType(A->getType());
           });
  if (N == "to") // a dtype only
    return llvm::none_of(C.arguments(), [](const Expr *A) {
      return !llvm::isa<CXXDefaultArgExpr>(A) &&
             (isDeviceType(A->getType()) || isTensorType(A->getType()) ||
              (isTensorOptionsType(A->getType()) &&
               !isDTypeType(ignoreConversions(A)->getType())));
    });
  return llvm::StringSwitch<bool>(N)
      .Cases("toType", "unsqueeze", "squeeze", "view", "reshape", "repeat",
             "expand", true)
      .Cases("t", "transpose", "permute", "flatten", "contiguous", "narrow",
             "slice", true)
      .Cases("float", "double", "half", "long", "int", "bool", "select", true)
      .Default(false);
}

/// The factory call a chain of casts and views starts from, or nullptr;
/// the links are appended to \p Links (innermost first).
const CallExpr *
factoryRoot(const Expr *E,
            llvm::SmallVectorImpl<const CXXMemberCallExpr *> *Links) {
  for (int Depth = 0; E && Depth < 8; ++Depth) {
    E = E->IgnoreImplicit();
    if (const auto *C = llvm::dyn_cast<CallExpr>(E);
        C && isTensorFactory(C->getDirectCallee()))
      return C;
    const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E);
    if (!MC || !isCastOrView(*MC))
      return nullptr;
    if (Links)
      Links->insert(Links->begin(), MC);
    E = MC->getImplicitObjectArgument();
  }
  return nullptr;
}

AST_MATCHER(Expr, isFactoryChain) {
  return factoryRoot(&Node, nullptr) != nullptr;
}

/// True when \p E holds a braced list of at least \p MinInits values, at any
/// depth.
bool hasInitList(const Stmt *E, unsigned MinInits, int Depth = 0) {
  if (!E || Depth > 16)
    return false;
  if (const auto *IL = llvm::dyn_cast<InitListExpr>(E);
      IL && IL->getNumInits() >= MinInits)
    return true;
  return llvm::any_of(E->children(), [&](const Stmt *C) {
    return hasInitList(C, MinInits, Depth + 1);
  });
}

/// torch::tensor(values) fills a host tensor and copies it whichever device
/// its options name (TensorDataContainer::convert_to_tensor): a list of
/// values, or values read from variables, members or calls, has no cheaper
/// form. Only a constant (`torch::tensor(0.5)`, `torch::tensor({0})`) could
/// have been made on the device (scalar_tensor, full).
bool copiesHostValues(const CallExpr &Factory, ASTContext &Ctx) {
  const FunctionDecl *FD = Factory.getDirectCallee();
  if (!FD->getIdentifier() || FD->getName() != "tensor" ||
      Factory.getNumArgs() == 0)
    return false;
  if (hasInitList(Factory.getArg(0), 2))
    return true;
  // Values read from a variable, a member or a call: data, not a constant.
  auto Data = expr(anyOf(declRefExpr(to(varDecl(unless(isConstexpr())))),
                         memberExpr(), callExpr()));
  return !match(expr(anyOf(Data, hasDescendant(Data))), *Factory.getArg(0), Ctx)
              .empty();
}

/// The argument of a `to()` call that names where it goes, if any.
const Expr *deviceArgument(const CXXMemberCallExpr &Move) {
  for (const Expr *A : Move.arguments())
    if (!llvm::isa<CXXDefaultArgExpr>(A) &&
        (isDeviceType(A->getType()) || isTensorOptionsType(A->getType())))
      return A;
  return nullptr;
}
/// The statement or declaration of a function body holding \p Node.
const Stmt *statementOf(const DynTypedNode &Node, ASTContext &Ctx) {
  DynTypedNode Cur = Node;
  for (int Depth = 0; Depth < 64; ++Depth) {
    Cur = parentOf(Cur, Ctx);
    if (Cur.getNodeKind().isNone())
      return nullptr;
    if (const auto *S = Cur.get<Stmt>(); S && !llvm::isa<Expr>(S))
      return S;
  }
  return nullptr;
}

/// `auto v = torch::zeros(s); ... f(v.to(d));`: the local holds the fresh
/// tensor until the move and nothing else reads it first. Every other
/// reference is the assignment of the move's result back to `v`, or comes
/// after that assignment; the declaration and the move run the same number
/// of times (same innermost loop).
bool onlyFeedsMove(const VarDecl &Var, const DeclRefExpr &Recv,
                   const CXXMemberCallExpr &Move, ASTContext &Ctx) {
  const auto *Fn = llvm::dyn_cast<FunctionDecl>(Var.getDeclContext());
  if (!Fn || !Fn->getBody())
    return false;
  const Stmt *DeclS = statementOf(DynTypedNode::create(Var), Ctx);
  if (!DeclS)
    return false;
  std::optional<EnclosingLoop> LD = findEnclosingLoop(*DeclS, Ctx);
  std::optional<EnclosingLoop> LM = findEnclosingLoop(Move, Ctx);
  if ((LD ? LD->Loop : nullptr) != (LM ? LM->Loop : nullptr))
    return false;
  // `v = v.to(d)`: the move's result replaces the host tensor.
  const Expr *Back = nullptr;
  DynTypedNode Parent = parentOf(Move, Ctx);
  for (int Depth = 0; Depth < 4 && !Parent.getNodeKind().isNone(); ++Depth) {
    if (const auto *Op = Parent.get<CXXOperatorCallExpr>()) {
      if (Op->isAssignmentOp() && Op->getNumArgs() == 2)
        if (const auto *L = llvm::dyn_cast<DeclRefExpr>(
                Op->getArg(0)->IgnoreParenImpCasts());
            L && L->getDecl() == &Var)
          Back = L;
      break;
    }
    if (!Parent.get<Expr>())
      break;
    Parent = parentOf(Parent, Ctx);
  }
  const SourceManager &SM = Ctx.getSourceManager();
  auto Refs =
      match(findAll(declRefExpr(to(varDecl(equalsNode(&Var)))).bind("ref")),
            *Fn->getBody(), Ctx);
  for (const BoundNodes &N : Refs) {
    const auto *R = N.getNodeAs<DeclRefExpr>("ref");
    if (R == &Recv || R == Back)
      continue;
    if (!Back ||
        !SM.isBeforeInTranslationUnit(Move.getEndLoc(), R->getBeginLoc()))
      return false;
  }
  return true;
}

AST_MATCHER(VarDecl, holdsFactoryChain) {
  const Expr *Init = Node.getInit();
  return Init && factoryRoot(Init, nullptr) != nullptr;
}
} // namespace

void CreateThenMoveCheck::registerCheckMatchers(MatchFinder *Finder) {
  Finder->addMatcher(expr(matchers::tensorMethodCall({"to", "cuda"}, "move"),
                          cxxMemberCallExpr(on(isFactoryChain()))),
                     this);
  // The same through a local that holds the fresh tensor until the move.
  Finder->addMatcher(
      expr(matchers::tensorMethodCall({"to", "cuda"}, "move"),
           cxxMemberCallExpr(on(ignoringParenImpCasts(
               declRefExpr(to(varDecl(hasLocalStorage(), unless(parmVarDecl()),
                                      unless(hasType(referenceType())),
                                      holdsFactoryChain())
                                  .bind("var")))
                   .bind("ref"))))),
      this);
  // A tensor made only to read what it was made with.
  Finder->addMatcher(
      expr(matchers::tensorMethodCall({"options"}, "read"),
           cxxMemberCallExpr(on(anyOf(
               isFactoryChain(), ignoringImplicit(matchers::tensorMethodCall(
                                     {"to", "cuda"}, "move"))))))
          .bind("read"),
      this);
}

namespace {

/// A factory's tensor made on the host and moved off it at once: what the
/// diagnostic and its fix-it say.
struct FactoryMove {
  const CXXMemberCallExpr *Move = nullptr;
  const CallExpr *Factory = nullptr;
  const FunctionDecl *FD = nullptr;
  const VarDecl *Var = nullptr; ///< the local that holds it until the move
  llvm::SmallVector<const CXXMemberCallExpr *, 4> Links; ///< casts, views
  CopyTarget T;
  const Expr *Other = nullptr; ///< `to(other)`: another tensor's device
  std::string NS;              ///< the factory's namespace ("torch", "at")
  std::string Dev;             ///< what to pass for the device
  bool PassOptions = false;    ///< Dev is a TensorOptions value to pass
  bool HostList = false;       ///< `torch::tensor({c})`: a list on the host
};

/// The move of a host-made factory tensor to where the host is not (a
/// CPU-fixed program's "device" is the host), or nothing to report.
std::optional<FactoryMove> classify(const CXXMemberCallExpr &Move,
                                    const VarDecl *Var, const DeclRefExpr *Ref,
                                    TensorPlaces &Places, ASTContext &Ctx) {
  FactoryMove M;
  M.Move = &Move;
  M.Var = Var;
  if (Var && !onlyFeedsMove(*Var, *Ref, Move, Ctx))
    return std::nullopt;
  M.Factory = factoryRoot(
      Var ? Var->getInit() : Move.getImplicitObjectArgument(), &M.Links);
  M.FD = M.Factory ? M.Factory->getDirectCallee() : nullptr;
  if (!M.FD)
    return std::nullopt;
  // Made on the host: no device in its options; `*_like(t)` with `t` there.
  if (Places.ofTensor(M.Factory) != Place::Host ||
      copiesHostValues(*M.Factory, Ctx))
    return std::nullopt;
  M.T = describeCopy(Move, Ctx);
  const Expr *DevArg = M.T.Method == "to" ? deviceArgument(Move) : nullptr;
  M.Other = M.T.LikeOther && writtenArgs(Move) == 1 ? Move.getArg(0) : nullptr;
  if (M.T.Method == "to" && !DevArg && !M.Other)
    return std::nullopt; // a dtype only
  std::optional<Place> To = M.T.Method == "cuda"
                                ? std::optional(Place::Accelerator)
                            : M.Other ? std::optional(Places.ofTensor(M.Other))
                                      : Places.deviceNamedBy(DevArg);
  if (!To || *To == Place::Host)
    return std::nullopt;

  const auto *NSDecl =
      dyn_cast<NamespaceDecl>(M.FD->getDeclContext()->getRedeclContext());
  M.NS = NSDecl ? NSDecl->getName().str() : "torch";
  // `.to(opts)` with a TensorOptions value: those options are what to pass.
  const Expr *WrittenDev = DevArg ? ignoreConversions(DevArg) : nullptr;
  M.PassOptions =
      M.Other || (WrittenDev && isTensorOptionsType(WrittenDev->getType()) &&
                  llvm::isa<DeclRefExpr, MemberExpr>(WrittenDev));
  M.Dev = M.T.Method == "cuda" ? M.NS + "::kCUDA"
          : M.Other ? sourceText(ignoreConversions(M.Other), Ctx) + ".options()"
                    : sourceText(WrittenDev, Ctx);
  // torch::tensor({c}) builds its list on the host whatever its options say.
  M.HostList =
      M.FD->getName() == "tensor" && hasInitList(M.Factory->getArg(0), 1);
  return M;
}

/// " (then 'unsqueeze()' there)", ", kept in 'v' until the move,".
std::string via(const FactoryMove &M) {
  std::string Via;
  for (const CXXMemberCallExpr *L : M.Links)
    Via += std::string(Via.empty() ? " (then '" : ", '") +
           L->getMethodDecl()->getName().str() + "()'";
  if (!Via.empty())
    Via += " there)";
  if (M.Var)
    Via += ", kept in '" + M.Var->getNameAsString() + "' until the move,";
  return Via;
}

std::string destination(const FactoryMove &M) {
  return M.PassOptions && !M.Other ? "to the device of '" + M.Dev + "'"
                                   : describeDestination(M.T);
}

/// What to write instead, also the fix-it's title.
std::string suggestion(const FactoryMove &M) {
  const std::string &NS = M.NS, &Dev = M.Dev;
  if (M.HostList)
    return "make it there with '" + NS + "::full({1}, value, " + NS +
           "::TensorOptions().device(" + Dev + "))'";
  if (M.PassOptions)
    return "pass '" + Dev + "' to '" + NS + "::" + M.FD->getName().str() +
           "()'";
  return "create it there with '" + NS + "::TensorOptions().device(" + Dev +
         ")'";
}

/// The device into the factory's options, `.to(...)` removed; casts and
/// views stay and run on the device. Only for a plain `.to(device)` or
/// `.cuda()`, with no macro, comment or directive in the way, and never two
/// sets of options to merge (left to the reader).
std::optional<llvm::SmallVector<FixItHint, 3>> fixesFor(const FactoryMove &M,
                                                        ASTContext &Ctx) {
  const CallExpr &Factory = *M.Factory;
  const CXXMemberCallExpr &Move = *M.Move;
  const int OptIdx = optionsParam(*M.FD);
  if (OptIdx < 0 || M.HostList || M.Var || Factory.getBeginLoc().isMacroID() ||
      Move.getEndLoc().isMacroID() ||
      (M.T.Method == "to" && (writtenArgs(Move) != 1 || M.T.changesDType())))
    return std::nullopt;
  const Expr *OptArg = static_cast<unsigned>(OptIdx) < Factory.getNumArgs() &&
                               !isa<CXXDefaultArgExpr>(Factory.getArg(OptIdx))
                           ? Factory.getArg(OptIdx)
                           : nullptr;
  const SourceManager &SM = Ctx.getSourceManager();
  const LangOptions &LO = Ctx.getLangOpts();
  const std::string &NS = M.NS, &Dev = M.Dev;
  SourceLocation RecvEnd = Lexer::getLocForEndOfToken(
      Move.getImplicitObjectArgument()->getEndLoc(), 0, SM, LO);
  llvm::SmallVector<FixItHint, 3> Fixes;
  if (OptArg) {
    if (M.PassOptions)
      return std::nullopt;
    const Expr *Written = ignoreConversions(OptArg);
    std::string Text = sourceText(Written, Ctx);
    Text = isTensorOptionsType(Written->getType())
               ? Text + ".device(" + Dev + ")"
               : NS + "::TensorOptions(" + Text + ").device(" + Dev + ")";
    Fixes.push_back(
        FixItHint::CreateReplacement(Written->getSourceRange(), Text));
  } else {
    // Every parameter before the options must be written to append it.
    if (writtenArgs(Factory) != static_cast<unsigned>(OptIdx))
      return std::nullopt;
    std::string Text =
        M.PassOptions ? Dev : NS + "::TensorOptions().device(" + Dev + ")";
    if (OptIdx == 0)
      Fixes.push_back(FixItHint::CreateInsertion(Factory.getRParenLoc(), Text));
    else
      Fixes.push_back(FixItHint::CreateInsertion(
          Lexer::getLocForEndOfToken(Factory.getArg(OptIdx - 1)->getEndLoc(), 0,
                                     SM, LO),
          ", " + Text));
  }
  Fixes.push_back(FixItHint::CreateRemoval(CharSourceRange::getCharRange(
      RecvEnd, Lexer::getLocForEndOfToken(Move.getEndLoc(), 0, SM, LO))));
  if (!areSafeFixes(Fixes, Ctx))
    return std::nullopt;
  return Fixes;
}

} // namespace

void CreateThenMoveCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  const auto *Move = Result.Nodes.getNodeAs<CXXMemberCallExpr>("move");
  if (const auto *Read = Result.Nodes.getNodeAs<CXXMemberCallExpr>("read")) {
    checkOptionsRead(*Read, Move, Ctx);
    return;
  }
  // The read reported it (the walk visits the read before the move in it).
  if (!Move || ReadMoves.contains(Move))
    return;
  std::optional<FactoryMove> M =
      classify(*Move, Result.Nodes.getNodeAs<VarDecl>("var"),
               Result.Nodes.getNodeAs<DeclRefExpr>("ref"), places(Ctx), Ctx);
  if (!M)
    return;
  std::optional<uint64_t> Bytes =
      M->Links.empty() ? factoryBytes(*M->Factory, Ctx) : std::nullopt;
  std::string Suggest = suggestion(*M);
  auto D = diag(Move->getExprLoc(),
                "'%0::%1()' fills a new %5tensor on the host%6 and '%2()' "
                "copies it %3 at once: "
                "the tensor is written twice and crosses the bus; %4")
           << M->NS << M->FD->getName() << M->T.Method << destination(*M)
           << Suggest << (Bytes ? formatBytes(*Bytes) + " " : std::string())
           << via(*M);
  if (std::optional<llvm::SmallVector<FixItHint, 3>> Fixes = fixesFor(*M, Ctx))
    fix(D, Move->getExprLoc(), Suggest, *Fixes);
}

void CreateThenMoveCheck::checkOptionsRead(const CXXMemberCallExpr &Read,
                                           const CXXMemberCallExpr *Move,
                                           ASTContext &Ctx) {
  const Expr *Made = Move ? Move->getImplicitObjectArgument()
                          : Read.getImplicitObjectArgument();
  const CallExpr *Factory = factoryRoot(Made, nullptr);
  const FunctionDecl *FD = Factory ? Factory->getDirectCallee() : nullptr;
  if (!FD)
    return;
  if (Move)
    ReadMoves.insert(Move);
  const auto *NSDecl =
      dyn_cast<NamespaceDecl>(FD->getDeclContext()->getRedeclContext());
  const std::string NS = NSDecl ? NSDecl->getName().str() : "torch";
  std::string Moved;
  if (Move) {
    CopyTarget T = describeCopy(*Move, Ctx);
    Moved = " and copies it " + describeDestination(T);
  }
  diag(Read.getExprLoc(),
       "'%0::%1()' allocates a tensor%2 only to read its options: build the "
       "'%0::TensorOptions()' (dtype, device) directly and allocate nothing")
      << NS << FD->getName() << Moved;
}

} // namespace clang::tidy::devcopy
