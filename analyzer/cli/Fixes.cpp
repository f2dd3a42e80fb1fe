#include "Fixes.h"

#include <map>
#include <set>

#include "AtomicFile.h"
#include "Cache.h"
#include "Input.h"
#include "clang/Basic/LangOptions.h"
#include "clang/Lex/Lexer.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/MemoryBuffer.h"

namespace devcopy::cli {

using clang::tooling::Replacement;
using clang::tooling::Replacements;

namespace {

/// One file to fix: its bytes now, and the edits taken so far by offset.
struct Target {
  std::string shown; // the path as the findings name it
  std::unique_ptr<llvm::MemoryBuffer> text;
  std::string hash;                       // contentHash of `text`
  std::map<unsigned, const Edit *> taken; // no two overlap (see conflicts)
};

/// Whether `e` overlaps an edit of `taken`; an identical one sets `same`.
/// Stricter than clang's Replacements (an insertion where another edit
/// starts is refused): a fix left out is reported, never half applied.
bool conflicts(const std::map<unsigned, const Edit *> &taken, const Edit &e,
               bool &same) {
  unsigned begin = e.begin.offset, end = begin + e.length;
  auto next = taken.lower_bound(begin);
  if (next != taken.end() && next->first == begin) {
    const Edit &o = *next->second;
    same = o.length == e.length && o.text == e.text;
    return !same;
  }
  if (next != taken.end() && next->first < end)
    return true;
  if (next == taken.begin())
    return false;
  const Edit &before = *std::prev(next)->second;
  return before.begin.offset + before.length > begin;
}

/// What a devcopy fix must never delete: a preprocessor line or a comment
/// (one the new text does not carry over) inside the replaced bytes. The
/// checks do not offer such fixes; this holds even if one slips through.
const char *damages(llvm::StringRef code, const Edit &e) {
  if (e.length == 0 || e.begin.offset + e.length > code.size())
    return nullptr;
  clang::LangOptions lang;
  lang.CPlusPlus = lang.CPlusPlus11 = lang.CPlusPlus17 = lang.LineComment = 1;
  const char *start = code.data();
  clang::Lexer lexer(clang::SourceLocation(), lang, start,
                     start + e.begin.offset, start + code.size());
  lexer.SetCommentRetentionState(true);
  clang::Token tok;
  while (!lexer.LexFromRawLexer(tok)) {
    unsigned end = unsigned(lexer.getBufferLocation() - start);
    unsigned at = end - tok.getLength();
    if (at >= e.begin.offset + e.length)
      break;
    if (tok.is(clang::tok::comment) &&
        !llvm::StringRef(e.text).contains(code.slice(at, end)))
      return "a comment";
    if (tok.is(clang::tok::hash)) {
      std::size_t line = code.rfind('\n', at) + 1; // npos + 1 == 0
      if (code.slice(line, at).find_first_not_of(" \t") ==
          llvm::StringRef::npos)
        return "a preprocessor line";
    }
  }
  return nullptr;
}

class FixSet {
public:
  FixSet(SourceText &sources, std::vector<ToolError> &errors)
      : sources_(sources), errors_(errors) {}

  /// Takes all of `f`'s edits or none (false: a conflict or a refusal).
  bool take(const Finding &f);
  /// Writes every file that got edits, all or none.
  std::set<std::string> commit(bool &ok);
  bool failed() const { return failed_; }

private:
  Target *target(const Edit &e);
  SourceText &sources_;
  std::vector<ToolError> &errors_;
  std::map<std::string, Target> files_; // real path -> its state
  std::set<std::string> reported_;      // files already named in an error
  bool failed_ = false;
};

Target *FixSet::target(const Edit &e) {
  const std::string &real = sources_.identity(e.begin.file);
  auto [it, fresh] = files_.try_emplace(real);
  Target &t = it->second;
  if (fresh) {
    t.shown = e.begin.file;
    auto buffer = llvm::MemoryBuffer::getFile(real);
    if (!buffer) {
      errors_.push_back(
          {t.shown, "cannot read '" + t.shown +
                        "' to apply fixes: " + buffer.getError().message()});
      failed_ = true;
    } else {
      t.text = std::move(*buffer);
      t.hash = contentHash(t.text->getBuffer());
    }
  }
  if (!t.text)
    return nullptr;
  if (e.analysed != t.hash) {
    if (reported_.insert(t.shown).second)
      errors_.push_back(
          {t.shown, "'" + t.shown +
                        "' changed since devcopy analyzed it; no fix was "
                        "applied to any file: run devcopy --fix again"});
    failed_ = true;
    return nullptr;
  }
  return &t;
}

bool FixSet::take(const Finding &f) {
  std::vector<std::pair<Target *, const Edit *>> mine;
  for (const Edit &e : f.fixes) {
    Target *t = target(e);
    if (!t)
      return false;
    const char *harm = llvm::StringRef(f.rule).starts_with("devcopy-")
                           ? damages(t->text->getBuffer(), e)
                           : nullptr;
    if (harm) {
      llvm::errs() << "devcopy: note: not applying the fix of " << t->shown
                   << ":" << f.where.line << ":" << f.where.column << " ["
                   << f.rule << "]: it would delete " << harm
                   << "; the finding stays\n";
      return false;
    }
    bool same = false;
    if (conflicts(t->taken, e, same))
      return false;
    if (same) // the same edit reached by another path or unit
      continue;
    for (const auto &[other, o] : mine)
      if (other == t && (o->begin.offset == e.begin.offset ||
                         (o->begin.offset < e.begin.offset + e.length &&
                          e.begin.offset < o->begin.offset + o->length)))
        return false;
    mine.emplace_back(t, &e);
  }
  for (const auto &[t, e] : mine)
    t->taken.emplace(e->begin.offset, e);
  return true;
}

std::set<std::string> FixSet::commit(bool &ok) {
  std::vector<AtomicFile> staged;
  ok = true;
  for (auto &[real, t] : files_) {
    if (t.taken.empty())
      continue;
    Replacements edits;
    for (const auto &[offset, e] : t.taken)
      if (llvm::Error err =
              edits.add(Replacement(real, offset, e->length, e->text)))
        llvm::consumeError(std::move(err)); // conflicts() ruled this out
    auto code =
        clang::tooling::applyAllReplacements(t.text->getBuffer(), edits);
    if (!code) {
      errors_.push_back({t.shown, "cannot apply fixes to '" + t.shown + "': " +
                                      llvm::toString(code.takeError())});
      ok = false;
      continue;
    }
    auto out = AtomicFile::create(t.shown);
    if (!out) {
      errors_.push_back({t.shown, llvm::toString(out.takeError()) +
                                      " (no fix was applied to any file)"});
      ok = false;
      continue;
    }
    out->os() << *code;
    staged.push_back(std::move(*out));
  }
  std::set<std::string> failed;
  if (!ok)
    return failed; // `staged` discards itself
  std::vector<std::string> unplaced;
  llvm::handleAllErrors(commitAll(staged, unplaced), [&](const FileProblem &p) {
    errors_.push_back({p.file, p.message});
  });
  for (const std::string &file : unplaced)
    failed.insert(sources_.identity(file));
  return failed;
}

} // namespace

unsigned applyFixes(std::vector<Finding> &findings, SourceText &sources,
                    std::vector<ToolError> &errors) {
  FixSet set(sources, errors);
  std::vector<std::size_t> taken; // findings whose fix is in `set`
  for (std::size_t i = 0; i < findings.size(); ++i)
    if (!findings[i].fixes.empty() && set.take(findings[i]))
      taken.push_back(i);
  if (set.failed())
    return 0;
  bool ok = false;
  std::set<std::string> failed = set.commit(ok);
  if (!ok)
    return 0;
  std::vector<bool> fixed(findings.size(), false);
  unsigned count = 0;
  for (std::size_t i : taken) {
    bool all = true;
    for (const Edit &e : findings[i].fixes)
      all = all && !failed.count(sources.identity(e.begin.file));
    fixed[i] = all;
    count += all;
  }
  std::vector<Finding> left;
  for (std::size_t i = 0; i < findings.size(); ++i)
    if (!fixed[i])
      left.push_back(std::move(findings[i]));
  findings = std::move(left);
  return count;
}

} // namespace devcopy::cli
