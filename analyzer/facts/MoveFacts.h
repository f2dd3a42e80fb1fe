// Facts about module moves that cross translation units, and their join.
//
// devcopy-repeated-module-move sees one translation unit. Real code moves
// submodules in a constructor defined in one .cpp and the whole model again in
// main.cpp, so each unit records what the others need (its module moves, the
// constructors that move their own object, the submodules each class
// registers) and a second step joins them. `devcopy analyze` joins the facts
// of all units of its run and writes them to a facts file; devcopy-tidy, the
// plugin and devcopy-clangd read that file, as clangd reads its index. The
// format (versioned JSON) is documented in docs/facts-file.md.
//
// Nothing here needs an AST: the join is a hash lookup per unresolved move.
// What the rule says of a hit is the check's (RepeatedModuleMoveFacts.h).
#pragma once

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clang::tidy::devcopy::facts {

/// Bumped on any change a reader of an older version would misread.
constexpr int Version = 1;
/// The file's name in the compile database's folder, where `devcopy analyze`
/// writes it and the other front ends look for it by default.
constexpr llvm::StringLiteral DefaultFileName = "devcopy-facts.json";

/// Where a move sends the module, as far as the source says.
struct Target {
  std::string Device;     ///< "", "cpu", "cuda", "other" or "runtime"
  std::string DeviceText; ///< spelling of the device argument
  std::string DType;      ///< spelling of the dtype argument, if any
};

/// Two moves may go to the same place: not one a dtype-only conversion where
/// the other changes the device, not to two different dtypes, and not to
/// provably different devices.
bool maySameTarget(const Target &A, const Target &B);

/// One Module::to call in a unit's main file.
struct Move {
  unsigned Line = 0, Column = 0, Offset = 0; ///< in the unit's main file
  std::string Class;    ///< qualified name of the module class moved
  std::string Object;   ///< "model", "model.enc", "this"
  std::string Function; ///< qualified name of the enclosing function
  Target To;
  /// Set when the move is a constructor's, on its own object or a member:
  /// the class constructed, and the members it goes through ({} = the whole
  /// object; {"block"} for `block->to(d)` or a local registered as "block").
  std::string ConstructorOf;
  std::vector<std::string> Via;
  /// A factory: the moved object is a local the function returns.
  bool Returned = false;
  /// The moved object is a local initialised by a call to this function
  /// (`auto net = build(device);`), by qualified name.
  std::string From;
  /// The innermost `if` around the move: its condition's spelling, `!`
  /// stripped, and whether the move runs when it is false.
  std::string Condition;
  bool Negated = false;
  /// The unit's own analysis decided this move: reported it, or compared it
  /// with an earlier move of the same module in the same function.
  bool Resolved = false;
};

/// `Owner` registers a submodule of class `Class` under member `Field`.
struct Registration {
  std::string Owner, Field, Class;
};

struct UnitFacts {
  std::string File; ///< the unit's main file, absolute
  std::vector<Move> Moves;
  std::vector<Registration> Registered;
};

/// A whole facts file: the units of one `devcopy analyze` run.
struct FactsFile {
  std::vector<UnitFacts> Units;
};

std::string toJSON(const FactsFile &F);
/// Parses a facts file; the error is one line naming what is wrong.
llvm::Expected<FactsFile> parse(llvm::StringRef Text);
llvm::Expected<FactsFile> readFile(llvm::StringRef Path);

/// The earlier move a later one repeats, found in another unit.
struct Hit {
  const UnitFacts *Unit = nullptr;
  const Move *First = nullptr;
  std::vector<std::string>
      Via; ///< registered members from the moved class to First's
};

/// Classes' constructor moves and registrations over many units, for lookups.
class Index {
public:
  void add(const UnitFacts &U);
  /// The earlier move \p Later repeats: the move in the function that
  /// returned the object (any unit), or a constructor move made in a unit
  /// other than \p LaterUnit (the caller has already compared those): of the
  /// class's own constructor, or of a registered submodule's, at any depth.
  std::optional<Hit> firstMove(const Move &Later,
                               llvm::StringRef LaterUnit) const;

private:
  bool candidate(const Move &First, const UnitFacts &U, const Move &Later,
                 llvm::StringRef LaterUnit) const;
  struct Entry {
    std::vector<std::pair<const UnitFacts *, const Move *>> CtorMoves;
    std::vector<std::pair<std::string, std::string>> Members; ///< field, class
  };
  llvm::StringMap<Entry> Classes;
  llvm::StringMap<std::vector<std::pair<const UnitFacts *, const Move *>>>
      Returns;
};

/// `devcopy analyze` installs a sink; the check hands it each unit's facts.
/// Unset everywhere else (then the check reads a facts file instead).
using Sink = std::function<void(UnitFacts)>;
void setSink(Sink S);
const Sink &sink();

/// A parsed facts file, cached by path, size and modification time so clangd
/// and clang-tidy read it once per change. A missing file gives nullptr and
/// no error; an unreadable or malformed one gives nullptr and a one-line
/// error, returned only the first time for that file version.
std::shared_ptr<const FactsFile> load(llvm::StringRef Path,
                                      std::string &FirstError);

} // namespace clang::tidy::devcopy::facts
