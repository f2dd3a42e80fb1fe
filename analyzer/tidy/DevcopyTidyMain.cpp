// devcopy-tidy: clang-tidy 19 with the devcopy module linked in. Same options
// as clang-tidy-19, so it also works as run-clang-tidy-19 -clang-tidy-binary.
#include "clang-tidy/tool/ClangTidyMain.h"
#include "common/ToolBanner.h"
#include "llvm/Support/Compiler.h"

namespace clang::tidy {
// Keeps the module's registration in the link even from an archive.
extern volatile int DevcopyModuleAnchorSource;
static int LLVM_ATTRIBUTE_UNUSED DevcopyModuleAnchorDestination =
    DevcopyModuleAnchorSource;
} // namespace clang::tidy

int main(int argc, const char **argv) {
  devcopy::addToolBanner(); // the checks in --help, devcopy's version in
                            // --version
  return clang::tidy::clangTidyMain(argc, argv);
}
