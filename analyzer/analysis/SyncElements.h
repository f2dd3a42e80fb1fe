// What a host read in a loop reads: an element of a tensor, the tensor it was
// picked from, a copy made earlier in the same chain. Helpers of
// devcopy-host-sync-in-loop.
#pragma once

#include "LoopFacts.h"
#include "TensorPlace.h"
#include "clang/AST/Expr.h"

namespace clang::tidy::devcopy {

/// \p E is a tensor copied to the host in its own chain: `x.cpu()`,
/// `x.to(kCPU).data()`, `x.detach().cpu()`.
bool copiedToHost(const Expr *E, const ASTContext &Ctx);

/// The tensor \p E picks elements of (`b` for `b[0][1]`, `b.index({0, i})`),
/// else \p E itself.
const Expr *subscriptBase(const Expr *E);

/// The whole tensor when \p Recv is one element of a tensor that does not
/// change in the loop, picked by an index that does (`out[i]`, `out[i][j]`,
/// `out.index({0, i})`), or a value computed on the device from such an
/// element alone (`torch::argmax(pred[r])`): the same work on the whole
/// tensor, downloaded once, replaces one sync per element. Also a value
/// computed afresh on every iteration from a tensor that does not change
/// (`torch::multinomial(p, 1)`, `w.sum()`): then \p WholeInvariant is set,
/// and one call before the loop (drawing all the samples at once) does it.
const Expr *elementOfInvariant(const Expr *Recv, LoopInvariance &Inv,
                               bool &WholeInvariant);

/// The parameter whose tensor \p E reads, through views, tensor methods and
/// local variables initialised from it (`auto flat = ids.squeeze(0);
/// flat[i]`), or null.
const ParmVarDecl *rootParameter(const Expr *E);

} // namespace clang::tidy::devcopy
