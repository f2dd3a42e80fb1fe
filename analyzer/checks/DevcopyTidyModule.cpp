// The devcopy clang-tidy module: registers every devcopy-* check.
#include "CopyInLoopCheck.h"
#include "CreateThenMoveCheck.h"
#include "DiscardedCopyCheck.h"
#include "HostSyncInLoopCheck.h"
#include "RedundantChainCheck.h"
#include "RepeatedModuleMoveCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"

namespace clang::tidy {
namespace devcopy {

class DevcopyModule : public ClangTidyModule {
public:
  void addCheckFactories(ClangTidyCheckFactories &Factories) override {
    Factories.registerCheck<DiscardedCopyCheck>("devcopy-discarded-copy");
    Factories.registerCheck<RedundantChainCheck>("devcopy-redundant-chain");
    Factories.registerCheck<CreateThenMoveCheck>("devcopy-create-then-move");
    Factories.registerCheck<RepeatedModuleMoveCheck>(
        "devcopy-repeated-module-move");
    Factories.registerCheck<CopyInLoopCheck>("devcopy-copy-in-loop");
    Factories.registerCheck<HostSyncInLoopCheck>("devcopy-host-sync-in-loop");
    // devcopy-checks-registry: new checks register above this line.
  }
};

} // namespace devcopy

static ClangTidyModuleRegistry::Add<devcopy::DevcopyModule>
    X("devcopy-module", "Finds redundant device copies in LibTorch code.");

// Referenced by statically linked front ends so the linker keeps this object
// (and the registration above) even when the checks come from an archive.
volatile int DevcopyModuleAnchorSource = 0;

} // namespace clang::tidy
