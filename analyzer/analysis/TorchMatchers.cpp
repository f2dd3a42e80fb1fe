#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringSwitch.h"

namespace clang::tidy::devcopy {

namespace {

/// True when \p DC is exactly the namespace path \p Path (outermost first),
/// skipping inline namespaces.
bool isNamespacePath(const DeclContext *DC,
                     llvm::ArrayRef<llvm::StringRef> Path) {
  for (auto It = Path.rbegin(); It != Path.rend(); ++It) {
    while (DC && DC->isInlineNamespace())
      DC = DC->getParent();
    const auto *NS = llvm::dyn_cast_or_null<NamespaceDecl>(DC);
    if (!NS || !NS->getIdentifier() || NS->getName() != *It)
      return false;
    DC = NS->getParent();
  }
  while (DC && DC->isInlineNamespace())
    DC = DC->getParent();
  return DC && DC->isTranslationUnit();
}

bool isNamed(const NamedDecl *D, llvm::StringRef Name,
             llvm::ArrayRef<llvm::StringRef> Namespace) {
  return D && D->getIdentifier() && D->getName() == Name &&
         isNamespacePath(D->getDeclContext(), Namespace);
}

/// \p RD or one of its bases satisfies \p Is. Dependent bases are skipped.
template <typename Pred>
bool isSameOrDerived(const CXXRecordDecl *RD, Pred Is, int Depth = 0) {
  if (!RD || Depth > 16)
    return false;
  if (Is(RD))
    return true;
  RD = RD->getDefinition();
  if (!RD)
    return false;
  for (const CXXBaseSpecifier &B : RD->bases())
    if (isSameOrDerived(B.getType()->getAsCXXRecordDecl(), Is, Depth + 1))
      return true;
  return false;
}

const CXXRecordDecl *recordOf(QualType T) {
  if (T.isNull())
    return nullptr;
  T = T.getNonReferenceType();
  if (const auto *PT = T->getAs<PointerType>())
    T = PT->getPointeeType();
  return T->getAsCXXRecordDecl();
}

/// The record type an expression evaluates to (value, reference or pointer).
const CXXRecordDecl *recordOfType(QualType T) { return recordOf(T); }

AST_MATCHER(CXXRecordDecl, isTensorClass) { return isTensorRecord(&Node); }
/// at::Tensor or at::TensorBase itself: a subclass's own `to()` is its own.
AST_MATCHER(CXXRecordDecl, isLibTorchTensorClass) {
  return isNamed(&Node, "TensorBase", {"at"}) ||
         isNamed(&Node, "Tensor", {"at"});
}
AST_MATCHER(CXXRecordDecl, isModuleClass) { return isModuleRecord(&Node); }
AST_MATCHER(Expr, hasTensorType) { return isTensorType(Node.getType()); }

AST_MATCHER(FunctionDecl, isTensorFactoryDecl) {
  return isTensorFactory(&Node);
}

} // namespace

bool isTensorRecord(const CXXRecordDecl *RD) {
  return isSameOrDerived(RD, [](const CXXRecordDecl *R) {
    return isNamed(R, "TensorBase", {"at"}) || isNamed(R, "Tensor", {"at"});
  });
}

bool isModuleRecord(const CXXRecordDecl *RD) {
  return isSameOrDerived(RD, [](const CXXRecordDecl *R) {
    return isNamed(R, "Module", {"torch", "nn"});
  });
}

bool isTensorType(QualType T) { return isTensorRecord(recordOfType(T)); }

bool isTensorContainerType(QualType T) {
  if (T.isNull())
    return false;
  const auto *Spec = llvm::dyn_cast_or_null<ClassTemplateSpecializationDecl>(
      T.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl());
  if (!Spec || Spec->getTemplateArgs().size() < 1 ||
      Spec->getTemplateArgs()[0].getKind() != TemplateArgument::Type ||
      !isTensorType(Spec->getTemplateArgs()[0].getAsType()))
    return false;
  return llvm::any_of(
      llvm::ArrayRef<llvm::StringRef>{"vector", "deque", "list", "array"},
      [&](llvm::StringRef Name) { return isNamed(Spec, Name, {"std"}); });
}

namespace {
/// The type itself, or X for c10::optional<X> (std::optional<X> in LibTorch
/// 2.x), without references.
const TagDecl *valueTagOf(QualType T) {
  if (T.isNull())
    return nullptr;
  T = T.getNonReferenceType().getCanonicalType();
  const TagDecl *TD = T->getAsTagDecl();
  if (const auto *Spec =
          llvm::dyn_cast_or_null<ClassTemplateSpecializationDecl>(TD);
      Spec &&
      (isNamed(Spec, "optional", {"c10"}) ||
       isNamed(Spec, "optional", {"std"})) &&
      Spec->getTemplateArgs().size() == 1)
    TD = Spec->getTemplateArgs()[0]
             .getAsType()
             .getCanonicalType()
             ->getAsTagDecl();
  return TD;
}
} // namespace

bool isDeviceType(QualType T) {
  const TagDecl *TD = valueTagOf(T);
  return isNamed(TD, "Device", {"c10"}) || isNamed(TD, "DeviceType", {"c10"});
}

bool isTensorOptionsType(QualType T) {
  return isNamed(valueTagOf(T), "TensorOptions", {"c10"});
}

bool isDTypeType(QualType T) {
  const TagDecl *TD = valueTagOf(T);
  return isNamed(TD, "ScalarType", {"c10"}) ||
         isNamed(TD, "TypeMeta", {"caffe2"});
}

bool isTorchFunction(const FunctionDecl *FD) {
  if (!FD)
    return false;
  const DeclContext *DC = FD->getDeclContext();
  while (DC && !DC->isTranslationUnit()) {
    const DeclContext *Parent = DC->getParent();
    while (Parent && Parent->isInlineNamespace())
      Parent = Parent->getParent();
    if (Parent && Parent->isTranslationUnit())
      break;
    DC = Parent;
  }
  return isNamespacePath(DC, {"torch"}) || isNamespacePath(DC, {"at"});
}

bool isLibraryNamespace(const Decl *D) {
  const auto *NS = llvm::dyn_cast<NamespaceDecl>(D);
  return NS && NS->getIdentifier() &&
         llvm::is_contained({"torch", "at", "c10", "caffe2", "std", "__gnu_cxx",
                             "cv", "Eigen", "boost", "pybind11"},
                            NS->getName());
}

bool inLibrary(const Decl *D) {
  const Decl *Outer = nullptr;
  for (const DeclContext *DC = D->getDeclContext(); DC; DC = DC->getParent())
    if (const auto *NS = llvm::dyn_cast<NamespaceDecl>(DC))
      Outer = NS;
  return Outer && isLibraryNamespace(Outer);
}

bool isTensorOptionsShorthand(const FunctionDecl *FD) {
  return FD && isTensorOptionsType(FD->getReturnType()) &&
         isNamespacePath(FD->getDeclContext(), {"c10"});
}

bool isTensorFactory(const FunctionDecl *FD) {
  if (!FD || !FD->getIdentifier())
    return false;
  llvm::StringRef Name = FD->getName();
  bool Known =
      llvm::StringSwitch<bool>(Name)
          .Cases("zeros", "ones", "empty", "full", "rand", "randn", true)
          .Cases("randint", "randperm", "arange", "linspace", "logspace", true)
          .Cases("eye", "tensor", "empty_strided", "range", true)
          .Default(Name.ends_with("_like"));
  return Known && (isNamespacePath(FD->getDeclContext(), {"torch"}) ||
                   isNamespacePath(FD->getDeclContext(), {"at"}));
}
bool isModuleType(QualType T) { return isModuleRecord(recordOfType(T)); }

namespace matchers {

const char *const CopyingMethods[] = {"to",     "cpu",        "cuda",
                                      "clone",  "contiguous", "pin_memory",
                                      "toType", "type_as"};

ast_matchers::internal::Matcher<CXXRecordDecl> tensorRecord() {
  return isTensorClass();
}
ast_matchers::internal::Matcher<CXXRecordDecl> moduleRecord() {
  return isModuleClass();
}
ast_matchers::internal::Matcher<Expr> tensorExpr() { return hasTensorType(); }

ast_matchers::internal::Matcher<Expr>
tensorMethodCall(llvm::ArrayRef<llvm::StringRef> Names, llvm::StringRef Id) {
  return cxxMemberCallExpr(
             callee(cxxMethodDecl(hasAnyName(Names),
                                  ofClass(isLibTorchTensorClass()))),
             on(expr().bind((Id + ".recv").str())))
      .bind(Id);
}

ast_matchers::internal::Matcher<Expr> copyCall(llvm::StringRef Id) {
  std::vector<llvm::StringRef> N(std::begin(CopyingMethods),
                                 std::end(CopyingMethods));
  return tensorMethodCall(N, Id);
}

ast_matchers::internal::Matcher<Expr> moduleToCall(llvm::StringRef Id) {
  return cxxMemberCallExpr(
             callee(cxxMethodDecl(hasName("to"), ofClass(isModuleClass()))),
             on(expr().bind((Id + ".recv").str())))
      .bind(Id);
}

ast_matchers::internal::Matcher<Expr> factoryCall(llvm::StringRef Id) {
  return callExpr(callee(functionDecl(isTensorFactoryDecl()))).bind(Id);
}

} // namespace matchers

std::string sourceText(const Expr *E, const ASTContext &Ctx) {
  if (!E)
    return "";
  const SourceManager &SM = Ctx.getSourceManager();
  // As spelled where the user wrote it: a macro argument's own text, else
  // the whole macro invocation.
  CharSourceRange R = Lexer::makeFileCharRange(
      CharSourceRange::getTokenRange(E->getSourceRange()), SM,
      Ctx.getLangOpts());
  if (R.isInvalid())
    R = SM.getExpansionRange(E->getSourceRange());
  return Lexer::getSourceText(R, SM, Ctx.getLangOpts()).str();
}

std::string receiverName(const Expr *Recv, const ASTContext &Ctx) {
  const Expr *E = ignoreConversions(Recv);
  if (const auto *DRE = llvm::dyn_cast_or_null<DeclRefExpr>(E))
    return DRE->getDecl()->getNameAsString();
  if (const auto *ME = llvm::dyn_cast_or_null<MemberExpr>(E))
    return ME->getMemberDecl()->getNameAsString();
  std::string Text = sourceText(E, Ctx);
  if (Text.size() > 40)
    Text = Text.substr(0, 37) + "...";
  return Text;
}

const Expr *assignableReceiver(const Expr *Recv, const ASTContext &Ctx) {
  const Expr *E = Recv ? Recv->IgnoreParenImpCasts() : nullptr;
  if (!E || !isTensorType(E->getType()) || E->getType()->isPointerType())
    return nullptr;
  bool Named = false;
  if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(E))
    Named = llvm::isa<VarDecl>(DRE->getDecl());
  else if (const auto *ME = llvm::dyn_cast<MemberExpr>(E))
    Named = llvm::isa<FieldDecl>(ME->getMemberDecl());
  if (!Named || E->getType().isConstQualified() || E->getBeginLoc().isMacroID())
    return nullptr;
  return E->isModifiableLvalue(const_cast<ASTContext &>(Ctx)) == Expr::MLV_Valid
             ? E
             : nullptr;
}

unsigned writtenArgs(const CallExpr &Call) {
  unsigned N = 0;
  for (const Expr *A : Call.arguments())
    N += !llvm::isa<CXXDefaultArgExpr>(A);
  return N;
}

} // namespace clang::tidy::devcopy
