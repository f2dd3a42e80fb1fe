#include "RepeatedModuleMoveCheck.h"
#include "RepeatedModuleMoveFacts.h"
#include "analysis/Parents.h"
#include "analysis/TorchModules.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include <algorithm>

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {

bool maySameTarget(const CopyTarget &A, const CopyTarget &B) {
  return facts::maySameTarget(toFactsTarget(A), toFactsTarget(B));
}

/// Surely the same place: same known device, or the same spelling.
bool sameTarget(const CopyTarget &A, const CopyTarget &B) {
  if (!maySameTarget(A, B))
    return false;
  if (A.Device == B.Device &&
      (A.Device == DeviceKind::CPU || A.Device == DeviceKind::CUDA))
    return true;
  return A.DeviceText == B.DeviceText;
}

} // namespace

RepeatedModuleMoveCheck::RepeatedModuleMoveCheck(StringRef Name,
                                                 ClangTidyContext *Context)
    : DevcopyCheck(Name, Context), FactsFile(Options.get("FactsFile", "")) {}

void RepeatedModuleMoveCheck::storeOptions(ClangTidyOptions::OptionMap &Opts) {
  DevcopyCheck::storeOptions(Opts);
  Options.store(Opts, "FactsFile", FactsFile);
}

void RepeatedModuleMoveCheck::registerCheckMatchers(MatchFinder *Finder) {
  // Whole translation unit but system headers (in case the walk is not
  // narrowed to the main file; see collectFromHeaders for when it is).
  auto User = unless(isExpansionInSystemHeader());
  // Template instantiations too: DevcopyCheck::diag reports a location once.
  Finder->addMatcher(expr(User, matchers::moduleToCall("move")), this);
  Finder->addMatcher(
      stmt(User, anyOf(assignedRegistration(), passedRegistration())), this);
  Finder->addMatcher(decl(User, initializedRegistration()), this);
  Finder->addMatcher(decl(User, registeredLocal()), this);
}

/// A local handed to register_module in a constructor: remembered with its
/// owner and, when assigned to one, the member (which then is the same module).
static void noteRegisteredLocal(
    const BoundNodes &N,
    llvm::DenseMap<const VarDecl *,
                   std::pair<const CXXRecordDecl *, const ValueDecl *>> &Map) {
  const auto *Var = N.getNodeAs<VarDecl>("regvar")->getCanonicalDecl();
  const auto *Field = N.getNodeAs<FieldDecl>("regfield");
  auto &Slot = Map[Var];
  Slot.first = N.getNodeAs<CXXConstructorDecl>("regctor")
                   ->getParent()
                   ->getCanonicalDecl();
  if (Field || !Slot.second)
    Slot.second =
        Field ? static_cast<const ValueDecl *>(Field->getCanonicalDecl()) : Var;
}

void RepeatedModuleMoveCheck::checkMatch(
    const MatchFinder::MatchResult &Result) {
  Ctx = Result.Context;
  if (Result.Nodes.getNodeAs<VarDecl>("regvar")) {
    noteRegisteredLocal(Result.Nodes, RegisteredLocals);
    return;
  }
  if (const auto *FD = Result.Nodes.getNodeAs<FieldDecl>("registered")) {
    Registered.insert(FD->getCanonicalDecl());
    return;
  }
  const auto *Call = Result.Nodes.getNodeAs<CXXMemberCallExpr>("move");
  if (Call)
    addMove(*Call, llvm::cast_or_null<FunctionDecl>(
                       enclosingFunction(*Call, *Ctx, Lambdas::OfCaller).Fn));
}

void RepeatedModuleMoveCheck::addMove(const CXXMemberCallExpr &Call,
                                      const FunctionDecl *Fn) {
  if (!Fn || Call.getBeginLoc().isInvalid() || !SeenCalls.insert(&Call).second)
    return;
  Move M;
  M.Call = &Call;
  M.Fn = Fn;
  const Expr *Obj = Call.getImplicitObjectArgument();
  if (!objectPath(Obj, M.Path))
    return;
  // The object's own class, not the torch::nn::Module* it is converted to.
  M.Class = moduleClassOf(Obj->IgnoreParenImpCasts()->getType());
  M.Target = describeCopy(Call, *Ctx);
  Moves.push_back(std::move(M));
}

void RepeatedModuleMoveCheck::collectFromHeaders() {
  // The class moved in its constructor usually lives in a header of the
  // project, which the walk skips when it is narrowed to the main file (and
  // clangd always narrows it). The project's own headers are walked here,
  // only when the main file moves a module; LibTorch's are never walked.
  const SourceManager &SM = Ctx->getSourceManager();
  for (Decl *D : Ctx->getTranslationUnitDecl()->decls()) {
    SourceLocation Loc = SM.getExpansionLoc(D->getLocation());
    if (D->isImplicit() || Loc.isInvalid() || SM.isInMainFile(Loc) ||
        SM.isInSystemHeader(Loc) || isLibraryNamespace(D))
      continue;
    for (const BoundNodes &N :
         match(decl(forEachDescendant(
                   functionDecl(
                       isDefinition(),
                       forEachDescendant(expr(matchers::moduleToCall("move"))))
                       .bind("fn"))),
               *D, *Ctx))
      addMove(*N.getNodeAs<CXXMemberCallExpr>("move"),
              N.getNodeAs<FunctionDecl>("fn"));
    for (const BoundNodes &N :
         match(decl(anyOf(forEachDescendant(stmt(anyOf(assignedRegistration(),
                                                       passedRegistration()))),
                          forEachDescendant(initializedRegistration()))),
               *D, *Ctx))
      Registered.insert(
          N.getNodeAs<FieldDecl>("registered")->getCanonicalDecl());
    for (const BoundNodes &N :
         match(decl(forEachDescendant(registeredLocal())), *D, *Ctx))
      noteRegisteredLocal(N, RegisteredLocals);
  }
}

bool RepeatedModuleMoveCheck::allRegistered(
    llvm::ArrayRef<const ValueDecl *> Fields) const {
  return llvm::all_of(Fields, [&](const ValueDecl *D) {
    if (const auto *VD = llvm::dyn_cast<VarDecl>(D))
      return RegisteredLocals.count(VD) > 0;
    const auto *FD = llvm::dyn_cast<FieldDecl>(D);
    return FD && Registered.contains(FD);
  });
}

unsigned RepeatedModuleMoveCheck::line(const Expr *E) const {
  return Ctx->getSourceManager().getExpansionLineNumber(E->getBeginLoc());
}

std::string RepeatedModuleMoveCheck::pathName(const Move &M) const {
  if (!M.Path.empty())
    return objectPathName(M.Path);
  const auto *MD = llvm::dyn_cast<CXXMethodDecl>(M.Fn);
  return MD ? MD->getParent()->getNameAsString() : "this";
}

bool RepeatedModuleMoveCheck::exclusive(const Move &A, const Move &B) {
  // The innermost statement holding both; exclusive when it is an if or ?:
  // and the two sit in different branches.
  llvm::DenseMap<const Stmt *, const Stmt *> ChildOnPathA;
  DynTypedNode Cur = DynTypedNode::create(*A.Call);
  for (int Depth = 0; Depth < 256; ++Depth) {
    DynTypedNode P = parentOf(Cur, *Ctx);
    if (!P.get<Stmt>())
      break;
    ChildOnPathA[P.get<Stmt>()] = Cur.get<Stmt>();
    Cur = P;
  }
  Cur = DynTypedNode::create(*B.Call);
  for (int Depth = 0; Depth < 256; ++Depth) {
    DynTypedNode Parent = parentOf(Cur, *Ctx);
    const Stmt *P = Parent.get<Stmt>();
    if (!P)
      return false;
    auto It = ChildOnPathA.find(P);
    if (It != ChildOnPathA.end()) {
      const Stmt *FromA = It->second, *FromB = Cur.get<Stmt>();
      if (const auto *If = llvm::dyn_cast<IfStmt>(P))
        return FromA != FromB && FromA != If->getCond() &&
               FromB != If->getCond();
      if (const auto *CO = llvm::dyn_cast<AbstractConditionalOperator>(P))
        return FromA != FromB && FromA != CO->getCond() &&
               FromB != CO->getCond();
      return false;
    }
    Cur = Parent;
  }
  return false;
}

bool RepeatedModuleMoveCheck::reassignedBetween(const Move &A, const Move &B) {
  const Stmt *Body = B.Fn->getBody();
  if (!Body)
    return false;
  const SourceManager &SM = Ctx->getSourceManager();
  for (const ValueDecl *D : B.Path) {
    auto Named =
        ignoringParenImpCasts(anyOf(declRefExpr(to(valueDecl(equalsNode(D)))),
                                    memberExpr(member(equalsNode(D)))));
    auto Assigns = match(
        findAll(
            expr(anyOf(cxxOperatorCallExpr(isAssignmentOperator(),
                                           hasArgument(0, Named)),
                       binaryOperator(isAssignmentOperator(), hasLHS(Named))))
                .bind("assign")),
        *Body, *Ctx);
    for (const auto &N : Assigns) {
      SourceLocation L = N.getNodeAs<Expr>("assign")->getBeginLoc();
      if (SM.isBeforeInTranslationUnit(A.Call->getEndLoc(), L) &&
          SM.isBeforeInTranslationUnit(L, B.Call->getBeginLoc()))
        return true;
    }
  }
  return false;
}

bool RepeatedModuleMoveCheck::checkSameFunction(
    const Move &Later, llvm::ArrayRef<const Move *> Earlier) {
  for (const Move *First : Earlier) {
    llvm::ArrayRef<const ValueDecl *> P1 = First->Path, P2 = Later.Path;
    size_t Common = std::min(P1.size(), P2.size());
    if (!std::equal(P1.begin(), P1.begin() + Common, P2.begin()))
      continue;
    // A move of an owner recurses into its registered submodules only.
    if (!allRegistered(P1.size() < P2.size() ? P2.drop_front(Common)
                                             : P1.drop_front(Common)))
      continue;
    if (!sameTarget(First->Target, Later.Target) || exclusive(*First, Later) ||
        reassignedBetween(*First, Later))
      continue;
    // Moved elsewhere in between (`to(kCPU)` to save it, then back): a
    // reload after an offload, not a repeat.
    const SourceManager &SM = Ctx->getSourceManager();
    if (llvm::any_of(Earlier, [&](const Move *Other) {
          return Other != First &&
                 SM.isBeforeInTranslationUnit(First->Call->getBeginLoc(),
                                              Other->Call->getBeginLoc()) &&
                 Other->Path.size() <= P2.size() &&
                 std::equal(Other->Path.begin(), Other->Path.end(),
                            P2.begin()) &&
                 !sameTarget(Other->Target, Later.Target);
        }))
      continue;
    std::string Name = objectPathName(P1.size() > P2.size() ? P1 : P2);
    std::string How;
    if (P1.size() < P2.size())
      How = ", together with its owner '" + pathName(*First) + "'";
    else if (P1.size() > P2.size())
      How = " (this move of its owner '" + pathName(Later) + "' moves it too)";
    if (Name.empty())
      Name = pathName(Later);
    diag(Later.Call->getExprLoc(), "module '%0' is moved %1 again; it was "
                                   "already moved at line %2%3, so any layer "
                                   "rebuilt in between is copied twice; move "
                                   "it once, after it is fully built")
        << Name << describeDestination(Later.Target) << line(First->Call)
        << How;
    diag(First->Call->getExprLoc(), "first move of '%0' here",
         DiagnosticIDs::Note)
        << Name;
    return true;
  }
  return false;
}

const RepeatedModuleMoveCheck::Move *
RepeatedModuleMoveCheck::findConstructorMove(
    const CXXRecordDecl *RD, llvm::SmallVectorImpl<const FieldDecl *> &Via,
    llvm::SmallPtrSetImpl<const CXXRecordDecl *> &Seen) {
  RD = RD ? RD->getDefinition() : nullptr;
  if (!RD || !Seen.insert(RD->getCanonicalDecl()).second || Via.size() > 8)
    return nullptr;
  // The registered submodules a move of RD recurses into, depth first.
  for (const FieldDecl *FD : RD->fields()) {
    if (!Registered.contains(FD->getCanonicalDecl()))
      continue;
    const CXXRecordDecl *Sub = moduleClassOf(FD->getType());
    if (!Sub)
      continue;
    Via.push_back(FD);
    if (const Move *M = ConstructorMoves.lookup(Sub))
      return M;
    if (const Move *M = findConstructorMove(Sub, Via, Seen))
      return M;
    Via.pop_back();
  }
  return nullptr;
}

bool RepeatedModuleMoveCheck::checkConstructorMove(const Move &M) {
  // Back to the CPU after a constructor's move to the device: an offload.
  if (!M.Class || M.Target.Device == DeviceKind::CPU)
    return false;
  const Move *First = nullptr;
  llvm::SmallVector<const FieldDecl *, 2> Via;
  // A variable or member holding the class: its constructor ran first.
  if (!M.Path.empty())
    First = ConstructorMoves.lookup(M.Class);
  if (!First) {
    llvm::SmallPtrSet<const CXXRecordDecl *, 8> Seen;
    First = findConstructorMove(M.Class, Via, Seen);
  }
  // Put into a container, built by a function, passed as a parameter.
  if (!First) {
    llvm::SmallPtrSet<const void *, 16> Seen;
    First = movedInside(M.Call->getImplicitObjectArgument(), 0, Seen);
    Via.clear();
  }
  if (!First || First == &M || First->Fn == M.Fn ||
      !maySameTarget(First->Target, M.Target))
    return false;
  // Opposite branches of one condition (`if (cfg.move_early)` in the
  // constructor, `if (!cfg.move_early)` at the caller) never both run.
  if (!First->Condition.empty() && First->Condition == M.Condition &&
      First->Negated != M.Negated)
    return false;
  std::string Name = M.Path.empty() ? "" : objectPathName(M.Path);
  for (const FieldDecl *FD : Via)
    Name += (Name.empty() ? "" : ".") + FD->getNameAsString();
  if (Name.empty())
    Name = pathName(M); // `this`: the class
  const auto *Ctor = llvm::cast<CXXConstructorDecl>(First->Fn);
  diag(M.Call->getExprLoc(),
       "module '%0' is moved %1 again; it was already moved at line %2 in its "
       "constructor, "
       "so layers rebuilt in between are copied twice; move the model once, "
       "after it is "
       "fully built, and leave the device out of the constructor of '%3'")
      << Name << describeDestination(M.Target) << line(First->Call)
      << Ctor->getParent()->getName();
  diag(First->Call->getExprLoc(),
       "'%0' is first moved here, in the constructor of '%1'",
       DiagnosticIDs::Note)
      << Name << Ctor->getParent()->getName();
  return true;
}

void RepeatedModuleMoveCheck::onEndOfTranslationUnit() {
  if (Ctx && !Moves.empty()) {
    const SourceManager &SM = Ctx->getSourceManager();
    if (llvm::any_of(Moves, [&](const Move &M) {
          return SM.isInMainFile(SM.getExpansionLoc(M.Call->getBeginLoc()));
        }))
      collectFromHeaders();
    std::stable_sort(Moves.begin(), Moves.end(),
                     [&](const Move &A, const Move &B) {
                       return SM.isBeforeInTranslationUnit(
                           A.Call->getBeginLoc(), B.Call->getBeginLoc());
                     });
    for (Move &M : Moves)
      readCondition(M);
    // Moves a constructor makes on its own object or members (or a local it
    // registers). A move to the CPU copies nothing for a module built on the
    // host, so it is never the first of two.
    for (const Move &M : Moves) {
      const auto *Ctor = llvm::dyn_cast<CXXConstructorDecl>(M.Fn);
      if (!Ctor || M.Target.Device == DeviceKind::CPU)
        continue;
      const CXXRecordDecl *Class = Ctor->getParent()->getCanonicalDecl();
      if (M.Path.empty() || registeredLocalField(M.Path[0], Class) ||
          (llvm::isa<FieldDecl>(M.Path[0]) &&
           llvm::cast<RecordDecl>(M.Path[0]->getDeclContext())
                   ->getCanonicalDecl() == Class))
        ConstructorMoves.try_emplace(Class, &M);
    }
    // Reported in the main file only, whether or not the walk covered headers,
    // so every front end and mode gives the same findings.
    llvm::DenseMap<const FunctionDecl *, llvm::SmallVector<const Move *, 4>>
        ByFunction;
    for (Move &M : Moves) {
      if (!SM.isInMainFile(SM.getExpansionLoc(M.Call->getBeginLoc())))
        continue;
      auto &Earlier = ByFunction[M.Fn];
      // A move after another of the same module in the same function was
      // compared with that one (a reload after an offload is no repeat of
      // the constructor's move).
      bool Follows = llvm::any_of(Earlier, [&](const Move *E) {
        return E->Path.size() <= M.Path.size() &&
               std::equal(E->Path.begin(), E->Path.end(), M.Path.begin()) &&
               !exclusive(*E, M);
      });
      M.Resolved =
          checkSameFunction(M, Earlier) || Follows || checkConstructorMove(M);
      Earlier.push_back(&M);
    }
  }
  // A unit that only registers submodules (a constructor defined in its own
  // .cpp) still tells the others who owns what.
  if (Ctx && FactsFile != "none" &&
      (!Moves.empty() || !Registered.empty() || !RegisteredLocals.empty())) {
    facts::UnitFacts Unit = unitFacts();
    if (const facts::Sink &Sink = facts::sink())
      Sink(std::move(Unit)); // devcopy analyze joins all units itself
    else if (!Unit.Moves.empty())
      checkAcrossUnits(Unit);
  }
  Moves.clear();
  SeenCalls.clear();
  Registered.clear();
  RegisteredLocals.clear();
  ConstructorMoves.clear();
  Ctx = nullptr;
}

} // namespace clang::tidy::devcopy
