// Whether code works with an accelerator, for a tensor whose place the
// source does not say (TensorPlace.h): the main file, or a project header it
// includes, names one or works with a device value; or the function around
// the code does, with a device that arrives from outside (a parameter, a
// member) counting as one, since real callers pass the GPU in. Shared by
// host-sync-in-loop and redundant-chain, so that a tensor of unknown place in
// code that never touches a device is a host tensor for both.
#pragma once

#include "analysis/TensorPlace.h"
#include "llvm/ADT/DenseMap.h"
#include <optional>

namespace clang {
class Decl;
class Stmt;
namespace tidy::devcopy {

class DevicesInPlay {
public:
  explicit DevicesInPlay(TensorPlaces &Places) : Places(Places) {}

  /// What a function (or the main file) shows about devices.
  struct Use {
    bool NamesAccelerator = false; ///< kCUDA, "cuda:0", .cuda(), torch::cuda::
    bool UsesDevice = false; ///< a Device / TensorOptions value, x.device()
  };
  Use inFunction(const Decl *Fn);
  /// The main file, or a project header it includes, names an accelerator
  /// or works with a device value that is not the host.
  bool inFile(ASTContext &Ctx);
  /// inFile, or the outermost function around \p S (a lambda belongs to its
  /// caller) names an accelerator or uses a device.
  bool around(const Stmt &S, ASTContext &Ctx);

private:
  TensorPlaces &Places;
  llvm::DenseMap<const Decl *, Use> Functions;
  std::optional<bool> File;
};

} // namespace tidy::devcopy
} // namespace clang
