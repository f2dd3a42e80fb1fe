// Response files in compile commands (`clang++ @flags.rsp`, as CMake's Ninja
// generator writes them): expanded as clang's driver does, before anything
// reads the command's flags.
#pragma once

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/VirtualFileSystem.h"

namespace devcopy::cli {

/// Replaces each `@file` argument of `command` by the arguments the file
/// holds (GNU quoting, nested files too), a relative file read from the
/// command's directory, as llvm::cl::ExpansionContext does for clang. An
/// error, in one line naming the response file, when one is missing, not a
/// regular file, larger than kMaxConfig or cannot be read.
llvm::Error expandResponseFiles(clang::tooling::CompileCommand &command,
                                llvm::vfs::FileSystem &fs);

} // namespace devcopy::cli
