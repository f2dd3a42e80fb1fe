// devcopy-repeated-module-move across translation units: what this unit tells
// the others (facts::UnitFacts), and the moves it repeats from them, read from
// the facts file of the last `devcopy analyze` run. The rest of the check, in
// one unit, is RepeatedModuleMoveCheck.cpp.
#include "RepeatedModuleMoveFacts.h"
#include "RepeatedModuleMoveCheck.h"
#include "analysis/TorchModules.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ParentMap.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Path.h"

namespace clang::tidy::devcopy {

facts::Target toFactsTarget(const CopyTarget &T) {
  static const char *const Names[] = {"", "cpu", "cuda", "other", "runtime"};
  return {Names[static_cast<int>(T.Device)], T.DeviceText, T.DTypeText};
}

CopyTarget toCopyTarget(const facts::Target &T) {
  CopyTarget C;
  C.Method = "to";
  C.Device = llvm::StringSwitch<DeviceKind>(T.Device)
                 .Case("cpu", DeviceKind::CPU)
                 .Case("cuda", DeviceKind::CUDA)
                 .Case("other", DeviceKind::Other)
                 .Case("runtime", DeviceKind::Runtime)
                 .Default(DeviceKind::None);
  C.DeviceText = T.DeviceText;
  C.DTypeText = T.DType;
  return C;
}

const ValueDecl *RepeatedModuleMoveCheck::registeredLocalField(
    const ValueDecl *D, const CXXRecordDecl *Owner) const {
  const auto *VD = llvm::dyn_cast<VarDecl>(D);
  auto It = VD ? RegisteredLocals.find(VD) : RegisteredLocals.end();
  if (It == RegisteredLocals.end() || It->second.first != Owner)
    return nullptr;
  return It->second.second;
}

void RepeatedModuleMoveCheck::readCondition(Move &M) const {
  Stmt *Body = M.Fn->getBody();
  if (!Body)
    return;
  ParentMap PM(Body);
  const Stmt *Child = M.Call;
  for (const Stmt *P = PM.getParent(Child); P; Child = P, P = PM.getParent(P)) {
    const auto *If = llvm::dyn_cast<IfStmt>(P);
    if (!If || Child == If->getCond() || Child == If->getInit())
      continue;
    M.Negated = Child == If->getElse();
    const Expr *C = If->getCond()->IgnoreParenImpCasts();
    while (const auto *Not = llvm::dyn_cast<UnaryOperator>(C)) {
      if (Not->getOpcode() != UO_LNot)
        break;
      M.Negated = !M.Negated;
      C = Not->getSubExpr()->IgnoreParenImpCasts();
    }
    M.Condition = sourceText(C, *Ctx);
    return;
  }
}

void RepeatedModuleMoveCheck::readFactory(const Move &M, facts::Move &F) const {
  using namespace ast_matchers;
  const auto *Var =
      M.Path.size() == 1 ? llvm::dyn_cast<VarDecl>(M.Path[0]) : nullptr;
  if (!Var || !Var->hasLocalStorage() || llvm::isa<ParmVarDecl>(Var))
    return;
  // `return var;`, through the holder's copy or move constructor.
  auto Ref = ignoringImplicit(declRefExpr(to(varDecl(equalsNode(Var)))));
  auto Returned = returnStmt(hasReturnValue(
      ignoringImplicit(anyOf(Ref, cxxConstructExpr(hasArgument(0, Ref))))));
  if (const Stmt *Body = M.Fn->getBody())
    F.Returned = !match(findAll(Returned), *Body, *Ctx).empty();
  // `auto var = build(...);`
  const Expr *Init =
      Var->getInit() ? Var->getInit()->IgnoreImplicit() : nullptr;
  if (const auto *Construct = llvm::dyn_cast_or_null<CXXConstructExpr>(Init))
    Init = Construct->getNumArgs() == 1 ? Construct->getArg(0)->IgnoreImplicit()
                                        : nullptr;
  const auto *Call = llvm::dyn_cast_or_null<CallExpr>(Init);
  if (const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr)
    if (!llvm::isa<CXXMethodDecl>(Callee))
      F.From = Callee->getQualifiedNameAsString();
}

facts::UnitFacts RepeatedModuleMoveCheck::unitFacts() const {
  const SourceManager &SM = Ctx->getSourceManager();
  facts::UnitFacts U;
  if (OptionalFileEntryRef Main = SM.getFileEntryRefForID(SM.getMainFileID())) {
    llvm::SmallString<256> P(Main->getName());
    SM.getFileManager().makeAbsolutePath(P);
    llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true);
    U.File = std::string(P);
  }
  auto ClassName = [](const CXXRecordDecl *RD) {
    return RD ? RD->getQualifiedNameAsString() : std::string();
  };
  for (const Move &M : Moves) {
    SourceLocation Loc = SM.getExpansionLoc(M.Call->getExprLoc());
    if (!SM.isInMainFile(Loc))
      continue;
    facts::Move F;
    F.Offset = SM.getFileOffset(Loc);
    F.Line = SM.getExpansionLineNumber(Loc);
    F.Column = SM.getExpansionColumnNumber(Loc);
    F.Class = ClassName(M.Class);
    F.Object = M.Path.empty() ? "this" : objectPathName(M.Path);
    F.Function = M.Fn->getQualifiedNameAsString();
    F.To = toFactsTarget(M.Target);
    F.Condition = M.Condition;
    F.Negated = M.Negated;
    F.Resolved = M.Resolved;
    readFactory(M, F);
    // A constructor's move of its own object, a member, or a local it
    // registers.
    if (const auto *Ctor = llvm::dyn_cast<CXXConstructorDecl>(M.Fn)) {
      const CXXRecordDecl *Class = Ctor->getParent()->getCanonicalDecl();
      llvm::SmallVector<const ValueDecl *, 3> Via(M.Path.begin(), M.Path.end());
      bool Own = Via.empty();
      if (!Own) {
        if (const ValueDecl *Field = registeredLocalField(Via[0], Class)) {
          Via[0] = Field;
          Own = true;
        } else if (const auto *FD = llvm::dyn_cast<FieldDecl>(Via[0])) {
          Own = FD->getParent()->getCanonicalDecl() == Class;
        }
      }
      if (Own) {
        F.ConstructorOf = ClassName(Class);
        for (const ValueDecl *D : Via)
          F.Via.push_back(D->getNameAsString());
      }
    }
    U.Moves.push_back(std::move(F));
  }
  for (const FieldDecl *FD : Registered)
    if (const CXXRecordDecl *Sub = moduleClassOf(FD->getType()))
      U.Registered.push_back(
          {ClassName(llvm::cast<CXXRecordDecl>(FD->getParent())),
           FD->getNameAsString(), ClassName(Sub)});
  for (const auto &[Var, OwnerAndField] : RegisteredLocals) {
    const auto [Owner, Target] = OwnerAndField;
    const CXXRecordDecl *Sub = moduleClassOf(Var->getType());
    if (Sub && !llvm::isa<FieldDecl>(Target)) // members are listed above
      U.Registered.push_back(
          {ClassName(Owner), Var->getNameAsString(), ClassName(Sub)});
  }
  return U;
}

std::string RepeatedModuleMoveCheck::factsPath() const {
  llvm::SmallString<256> P(FactsFile.empty()
                               ? llvm::StringRef(facts::DefaultFileName)
                               : llvm::StringRef(FactsFile));
  if (llvm::sys::path::is_absolute(P))
    return std::string(P);
  // Relative to the compile command's directory (clang-tidy and clangd both
  // make it the working directory of the unit's file system).
  FileManager &FM = Ctx->getSourceManager().getFileManager();
  llvm::ErrorOr<std::string> Cwd =
      FM.getVirtualFileSystem().getCurrentWorkingDirectory();
  llvm::SmallString<256> Abs(Cwd ? *Cwd : FM.getFileSystemOpts().WorkingDir);
  llvm::sys::path::append(Abs, P);
  llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
  return std::string(Abs);
}

SourceLocation RepeatedModuleMoveCheck::locationIn(StringRef File,
                                                   unsigned Line,
                                                   unsigned Column) const {
  SourceManager &SM = Ctx->getSourceManager();
  llvm::Expected<FileEntryRef> FE = SM.getFileManager().getFileRef(File);
  if (!FE) {
    llvm::consumeError(FE.takeError());
    return {};
  }
  return SM.translateLineCol(SM.getOrCreateFileID(*FE, SrcMgr::C_User), Line,
                             Column);
}

void RepeatedModuleMoveCheck::checkAcrossUnits(facts::UnitFacts &Unit) {
  std::string Error;
  std::shared_ptr<const facts::FactsFile> File =
      facts::load(factsPath(), Error);
  if (!Error.empty())
    configurationDiag("%0: %1") << getID() << Error;
  // Without a facts file, this unit alone (its factories' moves).
  facts::Index Index;
  if (File)
    for (const facts::UnitFacts &Other : File->Units)
      if (Other.File != Unit.File) // this unit's own facts are fresher
        Index.add(Other);
  Index.add(Unit);
  const SourceManager &SM = Ctx->getSourceManager();
  for (const facts::Move &M : Unit.Moves) {
    std::optional<facts::Hit> H = Index.firstMove(M, Unit.File);
    if (!H)
      continue;
    diag(SM.getComposedLoc(SM.getMainFileID(), M.Offset), "%0")
        << repeatedMoveMessage(M, *H);
    SourceLocation Note =
        locationIn(H->Unit->File, H->First->Line, H->First->Column);
    if (Note.isValid())
      diag(Note, "%0", DiagnosticIDs::Note) << repeatedMoveNote(M, *H);
  }
}

// ---- Messages ---------------------------------------------------------------

/// "model.block.conv1": the object moved, then the members down to the one
/// the constructor moved.
static std::string movedName(const facts::Move &Later, const facts::Hit &H) {
  std::string Name = Later.Object == "this" ? "" : Later.Object;
  for (const auto *Members : {&H.Via, &H.First->Via})
    for (const std::string &F : *Members)
      Name += (Name.empty() ? "" : ".") + F;
  return Name.empty() ? Later.Class : Name;
}

static std::string where(const facts::Hit &H) {
  return llvm::sys::path::filename(H.Unit->File).str() + ":" +
         std::to_string(H.First->Line);
}

std::string repeatedMoveMessage(const facts::Move &Later, const facts::Hit &H) {
  if (H.First->ConstructorOf.empty())
    return "module '" + movedName(Later, H) + "' is moved " +
           describeDestination(toCopyTarget(Later.To)) +
           " again; it was already moved in '" + H.First->Function + "' (" +
           where(H) + "), which returns it, so its parameters " +
           "are copied a second time and layers rebuilt in between are copied "
           "twice (double " +
           "VRAM while the first copies stay referenced); move it once, in '" +
           H.First->Function + "' or here";
  return "module '" + movedName(Later, H) + "' is moved " +
         describeDestination(toCopyTarget(Later.To)) +
         " again; it was already moved in the " + "constructor of '" +
         H.First->ConstructorOf + "' (" + where(H) +
         "), so its parameters are copied a second time and layers rebuilt in "
         "between are "
         "copied twice (double VRAM while the first copies stay referenced); "
         "move the model "
         "once, after it is fully built, and leave the device out of the "
         "constructor of '" +
         H.First->ConstructorOf + "'";
}

std::string repeatedMoveNote(const facts::Move &Later, const facts::Hit &H) {
  if (H.First->ConstructorOf.empty())
    return "'" + movedName(Later, H) + "' is first moved here, in '" +
           H.First->Function + "', which returns it";
  return "'" + movedName(Later, H) +
         "' is first moved here, in the constructor of '" +
         H.First->ConstructorOf + "'";
}

} // namespace clang::tidy::devcopy
