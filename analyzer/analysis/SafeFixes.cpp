#include "SafeFixes.h"
#include "clang/AST/ASTContext.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"

namespace clang::tidy::devcopy {

bool isSafeToRewrite(CharSourceRange Range, const ASTContext &Ctx) {
  const SourceManager &SM = Ctx.getSourceManager();
  const LangOptions &LO = Ctx.getLangOpts();
  if (Range.getBegin().isMacroID() || Range.getEnd().isMacroID())
    return false;
  CharSourceRange File = Lexer::makeFileCharRange(Range, SM, LO);
  if (File.isInvalid())
    return false;
  auto [FID, Begin] = SM.getDecomposedLoc(File.getBegin());
  auto [EndFID, End] = SM.getDecomposedLoc(File.getEnd());
  if (FID != EndFID || End < Begin)
    return false;
  bool Invalid = false;
  llvm::StringRef Buffer = SM.getBufferData(FID, &Invalid);
  if (Invalid)
    return false;
  // Raw-lex the text, comments kept: a directive is a `#` first on its line.
  Lexer Raw(SM.getLocForStartOfFile(FID), LO, Buffer.begin(),
            Buffer.begin() + Begin, Buffer.end());
  Raw.SetCommentRetentionState(true);
  Token Tok;
  while (true) {
    bool Last = Raw.LexFromRawLexer(Tok);
    if (Tok.is(tok::eof) || SM.getFileOffset(Tok.getLocation()) >= End)
      break;
    if (Tok.is(tok::comment) || (Tok.is(tok::hash) && Tok.isAtStartOfLine()))
      return false;
    if (Last)
      break;
  }
  return true;
}

bool areSafeFixes(llvm::ArrayRef<FixItHint> Fixes, const ASTContext &Ctx) {
  for (const FixItHint &F : Fixes) {
    const CharSourceRange &R = F.RemoveRange;
    bool Insertion = R.isCharRange() && R.getBegin() == R.getEnd();
    if (Insertion ? R.getBegin().isMacroID() : !isSafeToRewrite(R, Ctx))
      return false;
  }
  return true;
}

void addSafeFixes(DiagnosticBuilder &D, llvm::ArrayRef<FixItHint> Fixes,
                  const ASTContext &Ctx) {
  if (!areSafeFixes(Fixes, Ctx))
    return;
  for (const FixItHint &F : Fixes)
    D << F;
}

} // namespace clang::tidy::devcopy
