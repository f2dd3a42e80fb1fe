// devcopy-clangd: Debian's clangd 19 with the devcopy checks linked in. clangd
// cannot load clang-tidy plugins, so this is how editors get devcopy findings
// (and their fix-its as quick fixes) while typing. Same options and behaviour
// as clangd-19; the project's .clangd enables the devcopy-* checks.
#include "common/ToolBanner.h"
#include "llvm/Support/Compiler.h"

#include <cstring>
#include <string>
#include <vector>

namespace clang {
namespace clangd {
int clangdMain(int argc, char *argv[]);
} // namespace clangd
namespace tidy {
// Keeps the module's registration in the link even if the checks ever come
// from an archive; with the object library it costs nothing.
extern volatile int DevcopyModuleAnchorSource;
static int LLVM_ATTRIBUTE_UNUSED DevcopyModuleAnchorDestination =
    DevcopyModuleAnchorSource;
} // namespace tidy
} // namespace clang

int main(int argc, char *argv[]) {
  // clangd finds clang's builtin headers relative to its own binary; this one
  // lives in a build tree, so point it at the installed clang 19 resource dir,
  // the one clangd-19 uses, unless the user chose one.
  std::vector<char *> args(argv, argv + argc);
  bool hasResourceDir = false;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--resource-dir", 14) == 0 ||
        std::strncmp(argv[i], "-resource-dir", 13) == 0)
      hasResourceDir = true;
  std::string resourceDir = "--resource-dir=" DEVCOPY_CLANG_RESOURCE_DIR;
  if (!hasResourceDir)
    args.insert(args.begin() + 1, resourceDir.data());
  args.push_back(nullptr);
  devcopy::addToolBanner(); // the checks in --help
  // clangd prints its own version and skips LLVM's extra version printers.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--version") == 0 ||
        std::strcmp(argv[i], "-version") == 0)
      devcopy::printDevcopyVersion(llvm::outs());
  llvm::outs().flush();
  return clang::clangd::clangdMain(static_cast<int>(args.size()) - 1,
                                   args.data());
}
