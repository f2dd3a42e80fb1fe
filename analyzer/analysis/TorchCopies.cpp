// Reading copying calls: where a Tensor::to / cpu / clone call copies to,
// what a factory call creates. Declared in TorchMatchers.h.
#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include <cstdio>

namespace clang::tidy::devcopy {

bool encloses(const SourceManager &SM, SourceRange Outer, SourceRange Inner) {
  return Outer.isValid() && Inner.isValid() &&
         !SM.isBeforeInTranslationUnit(Inner.getBegin(), Outer.getBegin()) &&
         !SM.isBeforeInTranslationUnit(Outer.getEnd(), Inner.getEnd());
}

const Expr *ignoreConversions(const Expr *E) {
  while (E) {
    const Expr *Prev = E;
    E = E->IgnoreParenImpCasts();
    if (const auto *M = llvm::dyn_cast<MaterializeTemporaryExpr>(E))
      E = M->getSubExpr();
    else if (const auto *B = llvm::dyn_cast<CXXBindTemporaryExpr>(E))
      E = B->getSubExpr();
    else if (const auto *C = llvm::dyn_cast<ExprWithCleanups>(E))
      E = C->getSubExpr();
    else if (const auto *CE = llvm::dyn_cast<CXXConstructExpr>(E);
             CE && !llvm::isa<CXXTemporaryObjectExpr>(CE) &&
             CE->getNumArgs() >= 1 &&
             !llvm::isa<CXXDefaultArgExpr>(CE->getArg(0)) &&
             (CE->getNumArgs() == 1 ||
              llvm::isa<CXXDefaultArgExpr>(CE->getArg(1))))
      // Implicit conversions (Device from DeviceType, TensorOptions from
      // Device, optional<T> from T) and copies: the argument is what was
      // written.
      E = CE->getArg(0);
    if (E == Prev)
      return E;
  }
  return E;
}

DeviceKind classifyDevice(const Expr *E) {
  for (int Depth = 0; E && Depth < 8; ++Depth) {
    E = ignoreConversions(E);
    if (const auto *S = llvm::dyn_cast<StringLiteral>(E)) {
      llvm::StringRef V = S->getBytes();
      if (V.starts_with("cpu"))
        return DeviceKind::CPU;
      return V.starts_with("cuda") ? DeviceKind::CUDA : DeviceKind::Other;
    }
    if (const auto *FC = llvm::dyn_cast<CXXFunctionalCastExpr>(E)) {
      E = FC->getSubExpr();
      continue;
    }
    if (const auto *CE = llvm::dyn_cast<CXXConstructExpr>(E)) {
      // torch::Device(torch::kCUDA, 0), TensorOptions(kCUDA): the first
      // argument names the backend.
      if (CE->getNumArgs() == 0)
        return DeviceKind::Runtime;
      E = CE->getArg(0);
      continue;
    }
    if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E)) {
      // TensorOptions().dtype(kHalf).device(d): find the .device(...) link.
      const auto *MD = MC->getMethodDecl();
      if (!MD || !MD->getIdentifier() || !isTensorOptionsType(MC->getType()))
        return DeviceKind::Runtime;
      if (MD->getName() == "device" && MC->getNumArgs() >= 1) {
        E = MC->getArg(0);
        continue;
      }
      E = MC->getImplicitObjectArgument();
      continue;
    }
    if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(E)) {
      const ValueDecl *D = DRE->getDecl();
      if (const auto *EC = llvm::dyn_cast<EnumConstantDecl>(D)) {
        const auto *Enum = llvm::dyn_cast<EnumDecl>(EC->getDeclContext());
        if (!Enum || !isDeviceType(QualType(Enum->getTypeForDecl(), 0)))
          return DeviceKind::Runtime;
        if (EC->getName() == "CPU")
          return DeviceKind::CPU;
        return EC->getName() == "CUDA" ? DeviceKind::CUDA : DeviceKind::Other;
      }
      const auto *VD = llvm::dyn_cast<VarDecl>(D);
      // Constants (torch::kCUDA, or a user's `const auto dev = torch::kCPU`)
      // are followed to their initialiser; anything else is a runtime value.
      if (VD && VD->getType().isConstQualified() && VD->getInit()) {
        E = VD->getInit();
        continue;
      }
      return DeviceKind::Runtime;
    }
    return DeviceKind::Runtime;
  }
  return DeviceKind::Runtime;
}

std::string CopyTarget::deviceKey() const {
  switch (Device) {
  case DeviceKind::None:
    return "";
  case DeviceKind::CPU:
    return "cpu";
  case DeviceKind::CUDA:
    return "cuda";
  default:
    return DeviceText;
  }
}

namespace {
/// Reads a TensorOptions-typed argument: .device(...) and .dtype(...) links,
/// or the single value it was converted from.
void readOptions(const Expr *Arg, CopyTarget &T, const ASTContext &Ctx) {
  const Expr *E = ignoreConversions(Arg);
  for (int Depth = 0; E && Depth < 8; ++Depth) {
    const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E);
    const auto *MD = MC ? MC->getMethodDecl() : nullptr;
    if (!MD || !MD->getIdentifier() || !isTensorOptionsType(MC->getType()))
      break;
    if (MD->getName() == "device" && MC->getNumArgs() >= 1) {
      T.Device = classifyDevice(MC->getArg(0));
      T.DeviceText = sourceText(ignoreConversions(MC->getArg(0)), Ctx);
    } else if (MD->getName() == "dtype" && MC->getNumArgs() >= 1) {
      T.DTypeText = sourceText(ignoreConversions(MC->getArg(0)), Ctx);
    }
    E = ignoreConversions(MC->getImplicitObjectArgument());
  }
  if (!E || T.changesDevice() || T.changesDType())
    return;
  if (isDTypeType(E->getType())) {
    T.DTypeText = sourceText(E, Ctx);
  } else if (!(llvm::isa<CXXConstructExpr>(E) &&
               llvm::cast<CXXConstructExpr>(E)->getNumArgs() == 0)) {
    T.Device = classifyDevice(E);
    T.DeviceText = sourceText(E, Ctx);
  }
}

bool isTrue(const Expr *E, const ASTContext &Ctx) {
  if (!E || E->isValueDependent())
    return false;
  bool V = false;
  return E->EvaluateAsBooleanCondition(V, Ctx) && V;
}
} // namespace

CopyTarget describeCopy(const CXXMemberCallExpr &Call, const ASTContext &Ctx) {
  CopyTarget T;
  const CXXMethodDecl *MD = Call.getMethodDecl();
  if (!MD || !MD->getIdentifier())
    return T;
  T.Method = MD->getName().str();
  if (T.Method == "cpu") {
    T.Device = DeviceKind::CPU;
    T.DeviceText = "kCPU";
  } else if (T.Method == "cuda") {
    T.Device = DeviceKind::CUDA;
    T.DeviceText = "kCUDA";
  } else if (T.Method == "clone") {
    T.AlwaysCopies = true;
  } else if (T.Method == "toType" && Call.getNumArgs() >= 1) {
    T.DTypeText = sourceText(ignoreConversions(Call.getArg(0)), Ctx);
  } else if (T.Method == "type_as" && Call.getNumArgs() >= 1) {
    T.LikeOther = true;
    T.OtherText = sourceText(ignoreConversions(Call.getArg(0)), Ctx);
  } else if (T.Method == "to") {
    for (unsigned I = 0, N = std::min(Call.getNumArgs(), MD->getNumParams());
         I < N; ++I) {
      const Expr *Arg = Call.getArg(I);
      if (llvm::isa<CXXDefaultArgExpr>(Arg))
        continue;
      const ParmVarDecl *P = MD->getParamDecl(I);
      QualType PT = P->getType(); // the type helpers see through c10::optional
      llvm::StringRef PName = P->getIdentifier() ? P->getName() : "";
      if (PName == "non_blocking") {
        T.NonBlocking = isTrue(Arg, Ctx);
      } else if (PName == "copy") {
        T.AlwaysCopies = isTrue(Arg, Ctx);
      } else if (isTensorOptionsType(PT)) {
        readOptions(Arg, T, Ctx);
      } else if (isDeviceType(PT)) {
        T.Device = classifyDevice(Arg);
        T.DeviceText = sourceText(ignoreConversions(Arg), Ctx);
      } else if (isDTypeType(PT)) {
        T.DTypeText = sourceText(ignoreConversions(Arg), Ctx);
      } else if (isTensorType(PT)) {
        T.LikeOther = true;
        T.OtherText = sourceText(ignoreConversions(Arg), Ctx);
      }
    }
  }
  return T;
}

CopyTarget describeOptions(const Expr *Options, const ASTContext &Ctx) {
  CopyTarget T;
  if (Options)
    readOptions(Options, T, Ctx);
  return T;
}

std::string describeDevice(const CopyTarget &T) {
  switch (T.Device) {
  case DeviceKind::CPU:
    return "the CPU";
  case DeviceKind::CUDA:
    return "CUDA";
  case DeviceKind::None:
    return "the same device";
  default:
    return "'" + T.DeviceText + "'";
  }
}

std::string describeDestination(const CopyTarget &T) {
  std::string S;
  if (T.LikeOther)
    S = "to the device and dtype of '" + T.OtherText + "'";
  else if (T.changesDevice())
    S = "to " + describeDevice(T);
  else if (T.Method == "pin_memory")
    S = "into pinned host memory";
  else if (T.Method == "contiguous")
    S = "into a contiguous tensor";
  else if (!T.changesDType())
    S = "into a new tensor";
  if (T.changesDType())
    S += (S.empty() ? "to " : " as ") + T.DTypeText;
  return S;
}

namespace {
/// Element size of a dtype spelled kHalf, torch::kFloat32,
/// at::ScalarType::Long...
std::optional<uint64_t> elementSize(llvm::StringRef DType) {
  DType = DType.rsplit(':').second.empty() ? DType : DType.rsplit(':').second;
  DType.consume_front("k");
  return llvm::StringSwitch<std::optional<uint64_t>>(DType)
      .Cases("Bool", "Byte", "UInt8", "Char", "Int8", "U8", 1)
      .Cases("Half", "Float16", "BFloat16", "Short", "Int16", 2)
      .Cases("Float", "Float32", "Int", "Int32", 4)
      .Cases("Double", "Float64", "Long", "Int64", 8)
      .Default(std::nullopt);
}

std::optional<uint64_t> constantInt(const Expr *E, const ASTContext &Ctx) {
  Expr::EvalResult R;
  E = ignoreConversions(E);
  if (!E || E->isValueDependent() || !E->EvaluateAsInt(R, Ctx) ||
      R.Val.getInt().isNegative())
    return std::nullopt;
  return R.Val.getInt().getZExtValue();
}
} // namespace

std::optional<uint64_t> factoryBytes(const CallExpr &Factory,
                                     const ASTContext &Ctx) {
  const FunctionDecl *FD = Factory.getDirectCallee();
  if (!FD || !FD->getIdentifier() || Factory.getNumArgs() == 0)
    return std::nullopt;
  llvm::StringRef Name = FD->getName();
  uint64_t Elements = 1;
  if (Name == "eye") {
    auto N = constantInt(Factory.getArg(0), Ctx);
    if (!N)
      return std::nullopt;
    Elements = *N * *N;
  } else if (llvm::is_contained({"zeros", "ones", "empty", "rand", "randn"},
                                Name)) {
    // IntArrayRef from a braced list: {64, 128}.
    const Expr *Sizes = Factory.getArg(0)->IgnoreImplicit();
    while (const auto *CE = llvm::dyn_cast<CXXConstructExpr>(Sizes)) {
      if (CE->getNumArgs() == 0)
        return std::nullopt;
      Sizes = CE->getArg(0)->IgnoreImplicit();
    }
    if (const auto *Std = llvm::dyn_cast<CXXStdInitializerListExpr>(Sizes))
      Sizes = Std->getSubExpr()->IgnoreImplicit();
    const auto *List = llvm::dyn_cast<InitListExpr>(Sizes);
    if (!List)
      return std::nullopt;
    for (const Expr *Dim : List->inits()) {
      auto N = constantInt(Dim, Ctx);
      if (!N)
        return std::nullopt;
      Elements *= *N;
    }
  } else {
    return std::nullopt;
  }
  std::optional<uint64_t> Size = 4; // float unless the options say otherwise
  for (const Expr *Arg : Factory.arguments()) {
    if (llvm::isa<CXXDefaultArgExpr>(Arg))
      continue;
    if (isTensorOptionsType(Arg->getType())) {
      CopyTarget O = describeOptions(Arg, Ctx);
      if (O.changesDType())
        Size = elementSize(O.DTypeText);
    }
  }
  return Size ? std::optional<uint64_t>(Elements * *Size) : std::nullopt;
}

std::optional<uint64_t> dtypeSize(llvm::StringRef DType) {
  return elementSize(DType);
}

std::string formatBytes(uint64_t Bytes) {
  const char *Units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double V = static_cast<double>(Bytes);
  unsigned U = 0;
  while (V >= 1024 && U + 1 < std::size(Units)) {
    V /= 1024;
    ++U;
  }
  if (U == 0)
    return std::to_string(Bytes) + " B";
  char Buf[32];
  snprintf(Buf, sizeof(Buf), "%.1f %s", V, Units[U]);
  return Buf;
}

} // namespace clang::tidy::devcopy
