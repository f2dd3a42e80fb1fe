// clang-tidy's own check modules, kept in the link as clang-tidy keeps them:
// each module registers itself from a static object that nothing else
// references, so the linker would drop it from the archive. What
// clang-tidy's ClangTidyForceLinker.h does; that header needs
// clang-tidy-config.h, which Debian does not ship.
#include "llvm/Support/Compiler.h"

namespace clang::tidy {

#define DEVCOPY_KEEP_MODULE(Name)                                              \
  extern volatile int Name##ModuleAnchorSource;                                \
  static int LLVM_ATTRIBUTE_UNUSED Name##ModuleAnchorDestination =             \
      Name##ModuleAnchorSource;

DEVCOPY_KEEP_MODULE(Abseil)
DEVCOPY_KEEP_MODULE(Altera)
DEVCOPY_KEEP_MODULE(Android)
DEVCOPY_KEEP_MODULE(Boost)
DEVCOPY_KEEP_MODULE(Bugprone)
DEVCOPY_KEEP_MODULE(CERT)
DEVCOPY_KEEP_MODULE(Concurrency)
DEVCOPY_KEEP_MODULE(CppCoreGuidelines)
DEVCOPY_KEEP_MODULE(Darwin)
DEVCOPY_KEEP_MODULE(Fuchsia)
DEVCOPY_KEEP_MODULE(Google)
DEVCOPY_KEEP_MODULE(HICPP)
DEVCOPY_KEEP_MODULE(LinuxKernel)
DEVCOPY_KEEP_MODULE(LLVM)
DEVCOPY_KEEP_MODULE(LLVMLibc)
DEVCOPY_KEEP_MODULE(Misc)
DEVCOPY_KEEP_MODULE(Modernize)
DEVCOPY_KEEP_MODULE(MPI)
DEVCOPY_KEEP_MODULE(ObjC)
DEVCOPY_KEEP_MODULE(OpenMP)
DEVCOPY_KEEP_MODULE(Performance)
DEVCOPY_KEEP_MODULE(Portability)
DEVCOPY_KEEP_MODULE(Readability)
DEVCOPY_KEEP_MODULE(Zircon)

#undef DEVCOPY_KEEP_MODULE

} // namespace clang::tidy
