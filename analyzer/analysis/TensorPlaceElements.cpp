// TensorPlaces for containers of tensors: where the elements of a local
// `std::vector<Tensor>` live. Flow-insensitive on purpose: every write to the
// container anywhere in its function counts, so the answer holds at any use.
// A container is only trusted when every use of it is one of the shapes below
// (a read, an insertion, an element assignment); any other use may write to
// it through a reference and makes its elements unknown.
#include "Parents.h"
#include "TensorPlace.h"
#include "TensorPlaceDefinitions.h"
#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {

/// Several sources of one container's elements: they must agree.
struct ElementJoin {
  std::optional<Place> Result;
  void add(Place P) { Result = !Result || *Result == P ? P : Place::Unknown; }
  Place get() const { return Result.value_or(Place::Unknown); }
};

bool isNonConstLValueRef(QualType T) {
  return T->isLValueReferenceType() &&
         !T.getNonReferenceType().isConstQualified();
}

/// The nearest parent of \p E that is not a paren or an implicit node; none
/// where the AST shares a node on the way.
DynTypedNode parentPastImplicit(const Stmt *E, ASTContext &Ctx) {
  DynTypedNode Node = DynTypedNode::create(*E);
  for (int Depth = 0; Depth < 16; ++Depth) {
    bool Shared = false;
    Node = parentOf(Node, Ctx, &Shared);
    if (Node.getNodeKind().isNone() || Shared)
      return {};
    const auto *P = Node.get<Expr>();
    if (!P || !(llvm::isa<ParenExpr, ImplicitCastExpr, MaterializeTemporaryExpr,
                          CXXBindTemporaryExpr, ExprWithCleanups>(P)))
      return Node;
  }
  return {};
}

/// True when the use \p E of a container (or of one of its elements) may
/// write to it behind the analysis' back: bound to a non-const reference,
/// passed to one, or its address taken.
bool mayAlias(const Expr *E, ASTContext &Ctx) {
  DynTypedNode Parent = parentPastImplicit(E, Ctx);
  if (!Parent.get<Stmt>() && !Parent.get<Decl>())
    return true; // no single parent (a template's pattern): assume the worst
  if (const auto *VD = Parent.get<VarDecl>())
    return isNonConstLValueRef(VD->getType()) ||
           VD->getType()->isRValueReferenceType();
  if (const auto *UO = Parent.get<UnaryOperator>())
    return UO->getOpcode() == UO_AddrOf;
  if (const auto *Call = Parent.get<CallExpr>()) {
    const FunctionDecl *FD = Call->getDirectCallee();
    if (!FD)
      return true;
    unsigned Offset =
        llvm::isa<CXXOperatorCallExpr>(Call) && llvm::isa<CXXMethodDecl>(FD)
            ? 1
            : 0;
    for (unsigned I = 0; I < Call->getNumArgs(); ++I) {
      if (Call->getArg(I)->IgnoreParenImpCasts() != E->IgnoreParenImpCasts())
        continue;
      if (I < Offset)
        return false; // the object of a member operator: a read
      if (I - Offset >= FD->getNumParams())
        return true; // varargs
      QualType T = FD->getParamDecl(I - Offset)->getType();
      if (isNonConstLValueRef(T) || T->isPointerType())
        return true;
    }
  }
  return false;
}
} // namespace

Place TensorPlaces::elementsOf(const Expr *E, unsigned Depth) {
  if (!E || Depth > MaxPlaceDepth)
    return Place::Unknown;
  E = ignoreConversions(E);
  if (const auto *Std = llvm::dyn_cast<CXXStdInitializerListExpr>(E))
    E = ignoreConversions(Std->getSubExpr());
  if (const auto *IL = llvm::dyn_cast<InitListExpr>(E)) {
    ElementJoin Join; // {a, b}
    for (const Expr *Init : IL->inits())
      Join.add(isTensorType(Init->getType()) ? tensorOf(Init, Depth + 1)
                                             : elementsOf(Init, Depth + 1));
    return Join.get();
  }
  if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(E)) {
    const auto *VD = llvm::dyn_cast<VarDecl>(DRE->getDecl());
    return VD ? variableElements(VD, Depth + 1) : Place::Unknown;
  }
  // x.split(n), x.chunk(k), x.unbind(): where x is.
  if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E);
      MC && MC->getImplicitObjectArgument() &&
      isTensorType(MC->getImplicitObjectArgument()->getType()))
    return tensorOf(E, Depth + 1);
  if (const auto *Call = llvm::dyn_cast<CallExpr>(E)) {
    const FunctionDecl *FD = Call->getDirectCallee();
    if (!FD)
      return Place::Unknown;
    if (FD->isInStdNamespace() && FD->getIdentifier() &&
        FD->getName() == "move" && Call->getNumArgs() == 1)
      return elementsOf(Call->getArg(0), Depth + 1);
    if (isTorchFunction(FD)) // torch::split(x, n): where x is
      return tensorOf(E, Depth + 1);
    return returnedElements(FD, Depth + 1);
  }
  return Place::Unknown;
}

Place TensorPlaces::returnedElements(const FunctionDecl *FD, unsigned Depth) {
  const FunctionDecl *Def = nullptr;
  if (!FD || !FD->hasBody(Def) || inLibrary(Def))
    return Place::Unknown;
  const SourceManager &SM = Ctx.getSourceManager();
  if (!SM.isInMainFile(SM.getExpansionLoc(Def->getLocation())))
    return Place::Unknown;
  auto [It, New] = Returned.try_emplace(Def, Place::Unknown);
  if (!New)
    return It->second; // known, or in progress (recursion)
  ElementJoin Join;
  auto Returns = returnStmt(hasReturnValue(expr().bind("value")),
                            forFunction(functionDecl(equalsNode(Def))));
  for (const BoundNodes &N :
       match(stmt(forEachDescendant(Returns)), *Def->getBody(), Ctx))
    Join.add(elementsOf(N.getNodeAs<Expr>("value"), Depth + 1));
  return Returned[Def] = Join.get();
}

Place TensorPlaces::variableElements(const VarDecl *VD, unsigned Depth) {
  const auto *FD =
      llvm::dyn_cast_or_null<FunctionDecl>(VD->getParentFunctionOrMethod());
  // A range-for's hidden `auto &&__range = v;`: the elements of v.
  if (VD->isImplicit() && VD->getInit())
    return elementsOf(VD->getInit(), Depth + 1);
  // Parameters, members and globals may be filled anywhere.
  if (!FD || !FD->getBody() || llvm::isa<ParmVarDecl>(VD) ||
      !VD->hasLocalStorage() || VD->getType()->isReferenceType())
    return Place::Unknown;
  auto [It, New] = ElementVars.try_emplace(VD, Place::Unknown);
  if (!New)
    return It->second;
  ElementJoin Join;
  if (const Expr *Init = VD->getInit()) {
    // `std::vector<Tensor> v;` or `v(n)`: nothing in it yet, or undefined
    // tensors that hold no data.
    const auto *CE = llvm::dyn_cast<CXXConstructExpr>(ignoreConversions(Init));
    bool Empty = CE && (CE->getNumArgs() == 0 ||
                        (CE->getArg(0)->getType()->isIntegerType() &&
                         (CE->getNumArgs() == 1 ||
                          llvm::isa<CXXDefaultArgExpr>(CE->getArg(1)))));
    if (!Empty)
      Join.add(elementsOf(Init, Depth + 1));
  }
  auto Refs = declRefExpr(to(varDecl(equalsNode(VD)))).bind("ref");
  for (const BoundNodes &N :
       match(stmt(forEachDescendant(Refs)), *FD->getBody(), Ctx)) {
    if (std::optional<Place> P =
            writtenElements(VD, N.getNodeAs<Expr>("ref"), Depth))
      Join.add(*P);
    if (Join.Result == Place::Unknown)
      break;
  }
  return ElementVars[VD] = Join.get();
}

/// What one use \p Ref of the container \p VD puts into it: nullopt for a
/// read, else the place of what it inserts or assigns (Unknown when the use
/// may write to it through a reference).
std::optional<Place> TensorPlaces::writtenElements(const VarDecl *VD,
                                                   const Expr *Ref,
                                                   unsigned Depth) {
  DynTypedNode Parent = parentPastImplicit(Ref, Ctx);
  if (const auto *ME = Parent.get<MemberExpr>()) {
    const auto *MC = parentPastImplicit(ME, Ctx).get<CXXMemberCallExpr>();
    const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
    if (!MD || !MD->getIdentifier())
      return Place::Unknown;
    llvm::StringRef Name = MD->getName();
    if (llvm::is_contained({"push_back", "emplace_back", "push_front",
                            "emplace_front", "insert", "emplace"},
                           Name)) {
      ElementJoin Join;
      for (const Expr *Arg : MC->arguments()) {
        if (isTensorType(Arg->getType()))
          Join.add(tensorOf(Arg, Depth + 1));
        else if (isTensorContainerType(Arg->getType()))
          Join.add(elementsOf(Arg, Depth + 1));
      }
      return Join.get();
    }
    if (llvm::is_contained({"at", "front", "back"}, Name))
      return writtenElement(MC, Depth);
    if (MD->isConst() ||
        llvm::is_contained({"size", "empty", "reserve", "clear", "resize",
                            "pop_back", "pop_front", "erase", "shrink_to_fit"},
                           Name))
      return std::nullopt;
    return Place::Unknown; // begin(), data(), swap(): writes we do not follow
  }
  if (const auto *Op = Parent.get<CXXOperatorCallExpr>();
      Op && Op->getNumArgs() >= 1 &&
      Op->getArg(0)->IgnoreParenImpCasts() == Ref) {
    if (Op->getOperator() == OO_Subscript)
      return writtenElement(Op, Depth);
    if (Op->getOperator() == OO_Equal && Op->getNumArgs() == 2)
      return elementsOf(Op->getArg(1), Depth + 1);
  }
  // `for (auto &t : v)`: each write to t writes an element.
  if (const auto *Range = Parent.get<VarDecl>(); Range && Range->isImplicit()) {
    for (const auto &P : Ctx.getParents(*Range))
      if (const auto *DS = P.get<DeclStmt>())
        for (const auto &PP : Ctx.getParents(*DS))
          if (const auto *Loop = PP.get<CXXForRangeStmt>();
              Loop && Loop->getRangeStmt() == DS)
            return writtenThrough(Loop->getLoopVariable(), Depth);
    return Place::Unknown;
  }
  return mayAlias(Ref, Ctx) ? std::optional(Place::Unknown) : std::nullopt;
}

/// What the element \p Access (`v[i]`, `v.at(i)`) is given: the right side
/// of `v[i] = t`, nothing for a read.
std::optional<Place> TensorPlaces::writtenElement(const Expr *Access,
                                                  unsigned Depth) {
  DynTypedNode Parent = parentPastImplicit(Access, Ctx);
  if (const auto *Op = Parent.get<CXXOperatorCallExpr>();
      Op && Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 &&
      Op->getArg(0)->IgnoreParenImpCasts() == Access)
    return tensorOf(Op->getArg(1), Depth + 1);
  return mayAlias(Access, Ctx) ? std::optional(Place::Unknown) : std::nullopt;
}

/// What a range-for's loop variable writes into the elements it visits.
std::optional<Place> TensorPlaces::writtenThrough(const VarDecl *Element,
                                                  unsigned Depth) {
  if (!Element || !isNonConstLValueRef(Element->getType()))
    return std::nullopt; // a copy or a const reference: reads only
  const auto *FD = llvm::dyn_cast_or_null<FunctionDecl>(
      Element->getParentFunctionOrMethod());
  if (!FD || !FD->getBody())
    return Place::Unknown;
  ElementJoin Join;
  bool Wrote = false;
  auto Refs = declRefExpr(to(varDecl(equalsNode(Element)))).bind("ref");
  for (const BoundNodes &N :
       match(stmt(forEachDescendant(Refs)), *FD->getBody(), Ctx))
    if (std::optional<Place> P =
            writtenElement(N.getNodeAs<Expr>("ref"), Depth)) {
      Join.add(*P);
      Wrote = true;
    }
  return Wrote ? std::optional(Join.get()) : std::nullopt;
}

} // namespace clang::tidy::devcopy
