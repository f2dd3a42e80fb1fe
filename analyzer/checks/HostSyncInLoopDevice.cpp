// devcopy-host-sync-in-loop: whether a read waits for an accelerator. Where
// the tensor lives decides when the source says; otherwise whether a device
// is in play around the loop (analysis/DevicesInPlay.h).
#include "HostSyncInLoopCheck.h"
#include "analysis/SyncElements.h"

namespace clang::tidy::devcopy {

bool HostSyncInLoopCheck::acceleratorInPlay(const Stmt &Loop, const Expr *Recv,
                                            ASTContext &Ctx) {
  TensorPlaces &Places = places(Ctx);
  if (Places.programOnHost())
    return false; // fixed to the CPU: nothing to wait for
  // Where the tensor read is known to live decides.
  if (Recv) {
    if (Place P = Places.ofTensor(Recv); P != Place::Unknown)
      return P == Place::Accelerator;
    // A parameter that every caller in this file passes on the host.
    if (const ParmVarDecl *Param = rootParameter(Recv);
        Param && Places.ofParameter(Param) == Place::Host)
      return false;
  }
  // Unknown (a parameter, a function's result): a device is in play when the
  // file or the function around the loop works with one.
  return devicesInPlay(Ctx).around(Loop, Ctx);
}

} // namespace clang::tidy::devcopy
