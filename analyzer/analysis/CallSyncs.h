// Host syncs reached through calls: a function that reads a tensor on the
// host on every call syncs on every iteration of a loop that calls it.
// Summaries per function, built once per translation unit, through any depth
// of calls with a body in this unit (recursion ends the chain).
#pragma once

#include "FunctionFlow.h"
#include "SyncUse.h"
#include "clang/AST/Decl.h"
#include "llvm/ADT/DenseMap.h"
#include <optional>
#include <string>

namespace clang::tidy::devcopy {

/// The first sync a call runs every time, at any depth.
struct CallSync {
  const Expr *Sync = nullptr; ///< the read itself (in the callee, or deeper)
  std::string What; ///< "reading 'loss' with item() copies it to the host"
  UseKind Kind = UseKind::Dropped;
  bool Returned = false; ///< the read value is the function's result
  /// Set when the function reads several elements of one local tensor one by
  /// one (`out[0][3].item()`, `out[1][3].item()`): one copy would do, however
  /// the values are used. Sync is then the first read; Tensor the tensor.
  unsigned ElementReads = 0;
  const Expr *Tensor = nullptr;
};

class CallSyncs {
public:
  /// What calling \p FD syncs on every call, if anything.
  std::optional<CallSync> of(const FunctionDecl *FD, ASTContext &Ctx);
  void clear() {
    Map.clear();
    Flows.clear();
  }

  /// A function of the user's code with a body in this unit (not LibTorch's
  /// or the standard library's).
  static const FunctionDecl *userDefinition(const FunctionDecl *FD,
                                            const ASTContext &Ctx);

private:
  std::optional<CallSync> summarize(const FunctionDecl &FD, ASTContext &Ctx);
  std::optional<CallSync> elementReads(const Stmt &Body, FunctionFlow &Flow,
                                       ASTContext &Ctx);
  llvm::DenseMap<const FunctionDecl *, std::optional<CallSync>> Map;
  FunctionFlowCache Flows;
};

/// The sync's description for messages ("reading 'x' with item() copies it
/// to the host").
std::string describeSync(llvm::StringRef Method, const std::string &Name);

} // namespace clang::tidy::devcopy
