// TensorPlaces for device expressions: where a c10::Device, DeviceType,
// device string or TensorOptions points, and whether the program is fixed to
// the CPU. Split from TensorPlace.cpp (tensors).
#include "TensorPlace.h"
#include "TensorPlaceDefinitions.h"
#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

namespace clang::tidy::devcopy {

namespace {
/// Accelerators among c10::DeviceType's enumerators (CPU is the host, Meta
/// holds no data, the rest are devices with their own memory).
std::optional<Place> placeOfDeviceType(llvm::StringRef Name) {
  if (Name == "CPU")
    return Place::Host;
  if (Name == "Meta")
    return Place::Unknown;
  return Place::Accelerator;
}

std::optional<Place> placeOfDeviceString(llvm::StringRef S) {
  llvm::StringRef Type = S.split(':').first;
  if (Type == "cpu")
    return Place::Host;
  if (Type == "meta" || Type.empty())
    return Place::Unknown;
  return Place::Accelerator;
}

/// Joins the places of several definitions of a device variable: a device
/// that may be an accelerator is one.
Place joinDevices(Place A, Place B) {
  if (A == Place::Accelerator || B == Place::Accelerator)
    return Place::Accelerator;
  return A == B ? A : Place::Unknown;
}

std::optional<Place> joinDevices(std::optional<Place> A,
                                 std::optional<Place> B) {
  if (!A || !B)
    return A ? A : B;
  return joinDevices(*A, *B);
}

bool isStringType(QualType T) {
  if (T.isNull())
    return false;
  T = T.getNonReferenceType().getCanonicalType();
  if (T->isPointerType())
    return T->getPointeeType()->isCharType();
  const auto *RD = T->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() && RD->getName() == "basic_string";
}
} // namespace

Place TensorPlaces::ofDevice(const Expr *E) {
  return orProgram(deviceOf(E, 0).value_or(Place::Unknown));
}

std::optional<Place> TensorPlaces::deviceNamedBy(const Expr *E) {
  std::optional<Place> P = deviceOf(E, 0);
  return P ? std::optional(orProgram(*P)) : std::nullopt;
}

std::optional<Place> TensorPlaces::deviceOf(const Expr *E, unsigned Depth) {
  if (!E || Depth > MaxPlaceDepth)
    return Place::Unknown;
  // In a template's pattern `Device d(dependent)` is a parenthesized list
  // with no type yet: its single element is the device expression.
  if (const auto *PL = llvm::dyn_cast<ParenListExpr>(E->IgnoreParens()))
    return PL->getNumExprs() == 1 ? deviceOf(PL->getExpr(0), Depth + 1)
                                  : std::optional(Place::Unknown);
  E = ignoreConversions(E);
  if (E->getType().isNull())
    return Place::Unknown;
  if (isDTypeType(E->getType()))
    return std::nullopt; // TensorOptions converted from a dtype
  if (const auto *S = llvm::dyn_cast<StringLiteral>(E))
    return placeOfDeviceString(S->getBytes());
  // Device(name) with a name computed or read at run time: chosen at run time.
  if (isStringType(E->getType()) && !llvm::isa<CXXFunctionalCastExpr>(E))
    return Place::Accelerator;
  if (const auto *FC = llvm::dyn_cast<CXXFunctionalCastExpr>(E))
    return deviceOf(FC->getSubExpr(), Depth + 1);
  if (const auto *CO = llvm::dyn_cast<ConditionalOperator>(E)) {
    if (std::optional<bool> Cond = constantCondition(CO->getCond()))
      return deviceOf(*Cond ? CO->getTrueExpr() : CO->getFalseExpr(),
                      Depth + 1);
    return joinDevices(
        deviceOf(CO->getTrueExpr(), Depth + 1).value_or(Place::Unknown),
        deviceOf(CO->getFalseExpr(), Depth + 1).value_or(Place::Unknown));
  }
  if (const auto *BO = llvm::dyn_cast<BinaryOperator>(E);
      BO && BO->isAssignmentOp())
    return deviceOf(BO->getRHS(), Depth + 1);
  if (const auto *CE = llvm::dyn_cast<CXXConstructExpr>(E)) {
    // Device(kCUDA, 0), Device("cuda:0"), TensorOptions(kCUDA): the first
    // argument names the device; TensorOptions() names none.
    if (CE->getNumArgs() == 0 || llvm::isa<CXXDefaultArgExpr>(CE->getArg(0)))
      return isTensorOptionsType(CE->getType()) ? std::nullopt
                                                : std::optional(Place::Unknown);
    const Expr *Arg = ignoreConversions(CE->getArg(0));
    // A device named by a string read at run time: chosen at run time.
    if (!llvm::isa<StringLiteral>(Arg) && isStringType(Arg->getType()))
      return Place::Accelerator;
    if (isTensorOptionsType(CE->getType()) && !isDeviceType(Arg->getType()) &&
        !isTensorOptionsType(Arg->getType()) && !isStringType(Arg->getType()))
      return std::nullopt; // TensorOptions(kHalf): a dtype only
    return deviceOf(Arg, Depth + 1);
  }
  if (const auto *OC = llvm::dyn_cast<CXXOperatorCallExpr>(E);
      OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2)
    return deviceOf(OC->getArg(1), Depth + 1);
  if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    const Expr *Recv = MC->getImplicitObjectArgument();
    if (!MD || !MD->getIdentifier())
      return Place::Unknown;
    llvm::StringRef Name = MD->getName();
    if (Recv && isTensorType(Recv->getType()) &&
        (Name == "device" || Name == "options"))
      return tensorOf(Recv, Depth + 1);
    if (isTensorOptionsType(MC->getType())) {
      // TensorOptions().dtype(kHalf).device(d): the .device(...) link decides.
      if (Name == "device" && MC->getNumArgs() >= 1)
        return deviceOf(MC->getArg(0), Depth + 1);
      return Recv ? deviceOf(Recv, Depth + 1) : std::optional(Place::Unknown);
    }
    return Place::Unknown;
  }
  // The TensorOptions shorthands: torch::device(d), torch::dtype(t), ...
  // (c10's, brought into torch by a using-declaration).
  if (const CallExpr *C = llvm::dyn_cast_or_null<CallExpr>(E);
      C && (isTorchFunction(C->getDirectCallee()) ||
            isTensorOptionsShorthand(C->getDirectCallee()))) {
    const FunctionDecl *FD = C->getDirectCallee();
    if (FD->getIdentifier() && FD->getName() == "device" &&
        C->getNumArgs() == 1)
      return deviceOf(C->getArg(0), Depth + 1);
    // torch::dtype(t), torch::requires_grad(false), ...: no device named.
    if (FD->getIdentifier() &&
        llvm::is_contained({"dtype", "requires_grad", "layout", "memory_format",
                            "pinned_memory"},
                           FD->getName()))
      return std::nullopt;
    return Place::Unknown;
  }
  if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(E)) {
    const ValueDecl *D = DRE->getDecl();
    if (const auto *EC = llvm::dyn_cast<EnumConstantDecl>(D)) {
      const auto *Enum = llvm::dyn_cast<EnumDecl>(EC->getDeclContext());
      if (Enum && isDeviceType(Ctx.getEnumType(Enum)))
        return placeOfDeviceType(EC->getName());
      return Place::Unknown;
    }
    if (const auto *VD = llvm::dyn_cast<VarDecl>(D))
      return variableDevice(VD, Depth + 1);
  }
  return Place::Unknown;
}

std::optional<Place> TensorPlaces::variableDevice(const VarDecl *VD,
                                                  unsigned Depth) {
  // LibTorch's own constants (torch::kCUDA): their initialiser.
  if (!VD->isLocalVarDeclOrParm() && VD->getType().isConstQualified() &&
      VD->getInit() &&
      !Ctx.getSourceManager().isInMainFile(
          Ctx.getSourceManager().getExpansionLoc(VD->getLocation())))
    return deviceOf(VD->getInit(), Depth + 1);
  if (auto It = DeviceVars.find(VD); It != DeviceVars.end())
    return It->second;
  if (const auto *P = llvm::dyn_cast<ParmVarDecl>(VD))
    return parameterDevice(P, Depth);
  if (!InProgress.insert(VD).second)
    return Place::Unknown;
  std::optional<Place> Result;
  bool First = true;
  for (const Definition &D : definitionsOf(VD)) {
    if (D.At != VD->getInit() && inBranchNeverTaken(*D.At))
      continue; // `if (!cpu_only) device = kCUDA;` with cpu_only constant
    std::optional<Place> P =
        D.Value ? deviceOf(D.Value, Depth + 1) : Place::Unknown;
    Result = First ? P : joinDevices(Result, P);
    First = false;
  }
  InProgress.erase(VD);
  return DeviceVars[VD] = First ? std::optional(Place::Unknown) : Result;
}

std::optional<Place> TensorPlaces::parameterDevice(const ParmVarDecl *P,
                                                   unsigned Depth) {
  const auto *FD = llvm::dyn_cast_or_null<FunctionDecl>(P->getDeclContext());
  if (!FD || !FD->getIdentifier() || !P->hasDefaultArg() ||
      P->hasUnparsedDefaultArg() || P->hasUninstantiatedDefaultArg())
    return Place::Unknown;
  const Expr *Default = P->getDefaultArg();
  if (auto It = DeviceVars.find(P); It != DeviceVars.end())
    return It->second;
  // Reassigned in the body: the callers' device is not the one used.
  if (FD->getBody() && llvm::any_of(definitionsOf(P), [&](const Definition &D) {
        return D.At != Default;
      }))
    return DeviceVars[P] = Place::Unknown;
  if (!InProgress.insert(P).second)
    return Place::Unknown;
  std::optional<Place> Result;
  bool Any = false;
  for (const Expr *Arg : argumentsFor(P)) {
    if (!Arg)
      Arg = Default;
    std::optional<Place> A = deviceOf(Arg, Depth + 1);
    Result = Any ? joinDevices(Result, A) : A;
    Any = true;
  }
  // No call in this file: the default is the one device the source gives.
  if (!Any)
    Result = deviceOf(Default, Depth + 1);
  InProgress.erase(P);
  return DeviceVars[P] = Result.value_or(Place::Unknown);
}

namespace {
/// Evaluates the outermost device expressions of the main file and its
/// `.cuda()` calls, stopping at the first accelerator; and notes whether the
/// file chooses a host device itself (a device variable initialised to the
/// CPU), the evidence that the program is fixed to the CPU.
class AcceleratorFinder : public RecursiveASTVisitor<AcceleratorFinder> {
public:
  AcceleratorFinder(
      llvm::function_ref<std::optional<Place>(const Expr *)> PlaceOf,
      llvm::function_ref<std::optional<bool>(const Expr *)> CondOf)
      : PlaceOf(PlaceOf), CondOf(CondOf) {}
  bool shouldVisitTemplateInstantiations() const { return true; }
  bool Found = false;
  bool ChoosesHost = false;

  bool VisitVarDecl(VarDecl *VD) {
    // A parameter's device comes from the caller: no evidence either way.
    if (llvm::isa<ParmVarDecl>(VD) || !VD->hasInit() ||
        VD->getType()->isReferenceType() ||
        !(isDeviceType(VD->getType()) || isTensorOptionsType(VD->getType())))
      return true;
    if (PlaceOf(VD->getInit()).value_or(Place::Unknown) == Place::Host)
      ChoosesHost = true;
    return true;
  }

  bool TraverseStmt(Stmt *S, DataRecursionQueue *Queue = nullptr) {
    if (Found)
      return false;
    if (const auto *E = llvm::dyn_cast_or_null<Expr>(S);
        E && !E->isTypeDependent() &&
        (isDeviceType(E->getType()) || isTensorOptionsType(E->getType()))) {
      Found = PlaceOf(E).value_or(Place::Unknown) == Place::Accelerator;
      return !Found;
    }
    return RecursiveASTVisitor::TraverseStmt(S, Queue);
  }
  // A branch a constant condition never takes chooses no device.
  bool TraverseIfStmt(IfStmt *If, DataRecursionQueue *Queue = nullptr) {
    std::optional<bool> V = CondOf(If->getCond());
    if (!V)
      return RecursiveASTVisitor::TraverseIfStmt(If, Queue);
    return TraverseStmt(If->getInit()) && TraverseStmt(If->getCond()) &&
           TraverseStmt(*V ? If->getThen() : If->getElse());
  }
  bool VisitCXXMemberCallExpr(CXXMemberCallExpr *MC) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    if (MD && MD->getIdentifier() && MD->getName() == "cuda")
      Found = true;
    return !Found;
  }

private:
  llvm::function_ref<std::optional<Place>(const Expr *)> PlaceOf;
  llvm::function_ref<std::optional<bool>(const Expr *)> CondOf;
};
} // namespace

bool TensorPlaces::programOnHost() {
  if (OnHost)
    return *OnHost;
  if (ComputingOnHost)
    return false;
  ComputingOnHost = true;
  auto PlaceOf = [this](const Expr *E) { return deviceOf(E, 0); };
  auto CondOf = [this](const Expr *E) { return constantCondition(E); };
  AcceleratorFinder Finder(PlaceOf, CondOf);
  const SourceManager &SM = Ctx.getSourceManager();
  for (Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
    if (D->isImplicit() ||
        !SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
      continue;
    Finder.TraverseDecl(D);
    if (Finder.Found)
      break;
  }
  ComputingOnHost = false;
  // Fixed to the CPU only on evidence: a file that names no device at all
  // (a library taking the device as a parameter) is not.
  OnHost = !Finder.Found && Finder.ChoosesHost;
  return *OnHost;
}

} // namespace clang::tidy::devcopy
