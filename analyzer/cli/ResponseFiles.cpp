#include "ResponseFiles.h"

#include "Input.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/StringSaver.h"

namespace devcopy::cli {

llvm::Error expandResponseFiles(clang::tooling::CompileCommand &command,
                                llvm::vfs::FileSystem &fs) {
  auto isResponseFile = [](llvm::StringRef arg) {
    return arg.size() > 1 && arg.front() == '@';
  };
  if (llvm::none_of(command.CommandLine, isResponseFile))
    return llvm::Error::success();
  // The expansion reads whatever a name gives; bound it first (a device or a
  // pipe would be read forever).
  for (const std::string &arg : command.CommandLine) {
    if (!isResponseFile(arg))
      continue;
    std::string name = arg.substr(1);
    std::string file = absolutePath(name, command.Directory);
    auto problem = [&](const std::string &why) {
      return toolError("the compile command of '" + command.Filename +
                       "' reads response file '" + oneLine(name) + "', which " +
                       why +
                       "; rebuild the project to write it, or "
                       "regenerate the compile database");
    };
    llvm::ErrorOr<llvm::vfs::Status> st = fs.status(file);
    if (!st)
      return problem("does not exist in '" + command.Directory + "'");
    if (st->getType() != llvm::sys::fs::file_type::regular_file)
      return problem("is not a regular file");
    if (st->getSize() > kMaxConfig)
      return problem("is larger than " + std::to_string(kMaxConfig >> 20) +
                     " MiB");
  }
  llvm::BumpPtrAllocator alloc;
  llvm::StringSaver saver(alloc);
  llvm::SmallVector<const char *, 64> argv;
  for (const std::string &arg : command.CommandLine)
    argv.push_back(saver.save(arg).data());
  llvm::cl::ExpansionContext expansion(alloc, llvm::cl::TokenizeGNUCommandLine);
  expansion.setVFS(&fs).setCurrentDir(command.Directory);
  if (llvm::Error e = expansion.expandResponseFiles(argv))
    return toolError("cannot expand the response files of the compile "
                     "command of '" +
                     command.Filename +
                     "': " + oneLine(llvm::toString(std::move(e))));
  command.CommandLine.assign(argv.begin(), argv.end());
  return llvm::Error::success();
}

} // namespace devcopy::cli
