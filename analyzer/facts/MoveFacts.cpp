#include "MoveFacts.h"
#include "common/InputLimit.h"
#include "common/NestingLimit.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <mutex>

namespace json = llvm::json;

namespace clang::tidy::devcopy::facts {

// ---- Targets ----------------------------------------------------------------

bool maySameTarget(const Target &A, const Target &B) {
  bool DevA = !A.Device.empty(), DevB = !B.Device.empty();
  if (DevA != DevB)
    return false;
  if (!DevA)
    return A.DType == B.DType;
  if (!A.DType.empty() && !B.DType.empty() && A.DType != B.DType)
    return false;
  auto Known = [](llvm::StringRef D) { return D == "cpu" || D == "cuda"; };
  return !(Known(A.Device) && Known(B.Device) && A.Device != B.Device);
}

// ---- JSON -------------------------------------------------------------------

static json::Value toValue(const Move &M) {
  json::Object O{{"line", M.Line},        {"column", M.Column},
                 {"offset", M.Offset},    {"class", M.Class},
                 {"object", M.Object},    {"function", M.Function},
                 {"device", M.To.Device}, {"deviceText", M.To.DeviceText},
                 {"dtype", M.To.DType},   {"resolved", M.Resolved}};
  if (!M.ConstructorOf.empty()) {
    O["constructorOf"] = M.ConstructorOf;
    O["via"] = json::Array(M.Via);
  }
  if (M.Returned)
    O["returned"] = true;
  if (!M.From.empty())
    O["from"] = M.From;
  if (!M.Condition.empty()) {
    O["condition"] = M.Condition;
    O["negated"] = M.Negated;
  }
  return O;
}

std::string toJSON(const FactsFile &F) {
  json::Array Units;
  for (const UnitFacts &U : F.Units) {
    json::Array Moves, Registered;
    for (const Move &M : U.Moves)
      Moves.push_back(toValue(M));
    for (const Registration &R : U.Registered)
      Registered.push_back(json::Object{
          {"owner", R.Owner}, {"field", R.Field}, {"class", R.Class}});
    Units.push_back(json::Object{{"file", U.File},
                                 {"moves", std::move(Moves)},
                                 {"registered", std::move(Registered)}});
  }
  std::string S;
  llvm::raw_string_ostream OS(S);
  OS << json::Value(json::Object{{"format", "devcopy-facts"},
                                 {"version", Version},
                                 {"units", std::move(Units)}});
  return S;
}

static bool mapUnsigned(json::ObjectMapper &O, llvm::StringLiteral Key,
                        unsigned &Out, json::Path P) {
  int64_t N = 0;
  if (!O.map(Key, N))
    return false;
  if (N < 0 || N > UINT32_MAX) {
    P.field(Key).report("expected a non-negative 32-bit number");
    return false;
  }
  Out = unsigned(N);
  return true;
}

bool fromJSON(const json::Value &V, Move &M, json::Path P) {
  json::ObjectMapper O(V, P);
  return O && mapUnsigned(O, "line", M.Line, P) &&
         mapUnsigned(O, "column", M.Column, P) &&
         mapUnsigned(O, "offset", M.Offset, P) && O.map("class", M.Class) &&
         O.map("object", M.Object) && O.map("function", M.Function) &&
         O.mapOptional("device", M.To.Device) &&
         O.mapOptional("deviceText", M.To.DeviceText) &&
         O.mapOptional("dtype", M.To.DType) &&
         O.mapOptional("constructorOf", M.ConstructorOf) &&
         O.mapOptional("via", M.Via) &&
         O.mapOptional("condition", M.Condition) &&
         O.mapOptional("negated", M.Negated) &&
         O.mapOptional("resolved", M.Resolved) &&
         O.mapOptional("returned", M.Returned) && O.mapOptional("from", M.From);
}

bool fromJSON(const json::Value &V, Registration &R, json::Path P) {
  json::ObjectMapper O(V, P);
  return O && O.map("owner", R.Owner) && O.map("field", R.Field) &&
         O.map("class", R.Class);
}

bool fromJSON(const json::Value &V, UnitFacts &U, json::Path P) {
  json::ObjectMapper O(V, P);
  return O && O.map("file", U.File) && O.map("moves", U.Moves) &&
         O.map("registered", U.Registered);
}

llvm::Expected<FactsFile> parse(llvm::StringRef Text) {
  if (std::optional<std::string> Deep =
          ::devcopy::nestingError(Text, /*Json=*/true))
    return llvm::createStringError(*Deep);
  llvm::Expected<json::Value> V = json::parse(Text);
  if (!V)
    return V.takeError();
  const json::Object *Top = V->getAsObject();
  std::optional<llvm::StringRef> Format =
      Top ? Top->getString("format") : std::nullopt;
  if (!Format || *Format != "devcopy-facts")
    return llvm::createStringError(
        "not a devcopy facts file (no \"format\": \"devcopy-facts\")");
  std::optional<int64_t> Ver = Top->getInteger("version");
  if (!Ver || *Ver != Version) {
    std::string Was = "(none)"; // the value as written: 1.5, "1", ...
    if (const json::Value *V = Top->get("version")) {
      Was.clear();
      llvm::raw_string_ostream(Was) << *V;
    }
    return llvm::createStringError("facts format version " + Was.substr(0, 40) +
                                   ", this devcopy reads version " +
                                   std::to_string(Version));
  }
  FactsFile F;
  json::Path::Root Root("facts");
  const json::Value *Units = Top->get("units");
  if (!Units || !fromJSON(*Units, F.Units, json::Path(Root).field("units"))) {
    if (!Units)
      return llvm::createStringError("no \"units\" array");
    return Root.getError();
  }
  return F;
}

llvm::Expected<FactsFile> readFile(llvm::StringRef Path) {
  llvm::Expected<std::string> Text =
      ::devcopy::readText(Path.str(), /*Limit=*/256u << 20);
  if (!Text)
    return Text.takeError();
  return parse(*Text);
}

// ---- Join -------------------------------------------------------------------

void Index::add(const UnitFacts &U) {
  for (const Move &M : U.Moves) {
    // A move to the CPU copies nothing for a module built on the host: never
    // the first of two.
    if (M.To.Device == "cpu")
      continue;
    if (!M.ConstructorOf.empty())
      Classes[M.ConstructorOf].CtorMoves.push_back({&U, &M});
    if (M.Returned)
      Returns[M.Function].push_back({&U, &M});
  }
  for (const Registration &R : U.Registered) {
    auto &Members = Classes[R.Owner].Members;
    std::pair<std::string, std::string> Member{R.Field, R.Class};
    if (!llvm::is_contained(Members, Member)) // headers come once per unit
      Members.push_back(std::move(Member));
  }
}

bool Index::candidate(const Move &First, const UnitFacts &U, const Move &Later,
                      llvm::StringRef LaterUnit) const {
  // Back to the CPU after a constructor's move to the device: an offload.
  if (U.File == LaterUnit || &First == &Later || Later.To.Device == "cpu")
    return false;
  // Opposite branches of the same condition never both run.
  if (!First.Condition.empty() && First.Condition == Later.Condition &&
      First.Negated != Later.Negated)
    return false;
  return maySameTarget(First.To, Later.To);
}

std::optional<Hit> Index::firstMove(const Move &Later,
                                    llvm::StringRef LaterUnit) const {
  if (Later.Resolved || Later.Class.empty())
    return std::nullopt;
  // The function that built and moved the object, in this unit or another
  // (no unit compares these itself).
  if (auto It = Returns.find(Later.From);
      !Later.From.empty() && It != Returns.end())
    for (auto [U, M] : It->second)
      if (candidate(*M, *U, Later, ""))
        return Hit{U, M, {}};
  // The class's own constructor ran before anyone else could move the object.
  Hit H;
  if (auto It = Classes.find(Later.Class);
      It != Classes.end() && Later.Object != "this")
    for (auto [U, M] : It->second.CtorMoves)
      if (candidate(*M, *U, Later, LaterUnit))
        return Hit{U, M, {}};
  // A move recurses into registered submodules: depth first, cycles cut.
  llvm::StringSet<> Seen;
  std::function<bool(llvm::StringRef, int)> Walk = [&](llvm::StringRef Class,
                                                       int Depth) {
    auto It = Classes.find(Class);
    if (Depth > 8 || It == Classes.end() || !Seen.insert(Class).second)
      return false;
    for (const auto &[Field, Sub] : It->second.Members) {
      H.Via.push_back(Field);
      if (auto SubIt = Classes.find(Sub); SubIt != Classes.end())
        for (auto [U, M] : SubIt->second.CtorMoves)
          if (candidate(*M, *U, Later, LaterUnit)) {
            H.Unit = U;
            H.First = M;
            return true;
          }
      if (Walk(Sub, Depth + 1))
        return true;
      H.Via.pop_back();
    }
    return false;
  };
  if (Walk(Later.Class, 0))
    return H;
  return std::nullopt;
}

// ---- Process-wide state -----------------------------------------------------

static Sink &sinkSlot() {
  static Sink S;
  return S;
}
void setSink(Sink S) { sinkSlot() = std::move(S); }
const Sink &sink() { return sinkSlot(); }

std::shared_ptr<const FactsFile> load(llvm::StringRef Path,
                                      std::string &FirstError) {
  struct Cached {
    llvm::sys::TimePoint<> MTime;
    uint64_t Size = 0;
    std::shared_ptr<const FactsFile> Facts;
  };
  static std::mutex Mu;
  static std::map<std::string, Cached> Cache;
  llvm::sys::fs::file_status St;
  if (llvm::sys::fs::status(Path, St) || !llvm::sys::fs::exists(St))
    return nullptr;
  std::lock_guard<std::mutex> Lock(Mu);
  auto [It, New] = Cache.try_emplace(Path.str());
  Cached &C = It->second;
  if (!New && C.MTime == St.getLastModificationTime() && C.Size == St.getSize())
    return C.Facts;
  C.MTime = St.getLastModificationTime();
  C.Size = St.getSize();
  C.Facts = nullptr;
  llvm::Expected<FactsFile> F = readFile(Path);
  if (!F) {
    FirstError = "cannot read facts file '" + Path.str() +
                 "': " + llvm::toString(F.takeError()) +
                 "; cross-file moves are not checked; run 'devcopy analyze' "
                 "again to rewrite it";
    return nullptr;
  }
  C.Facts = std::make_shared<const FactsFile>(std::move(*F));
  return C.Facts;
}

} // namespace clang::tidy::devcopy::facts
