// Unit tests of TensorPlaces (analyzer/analysis/TensorPlace.h) on mock-header
// snippets. Each snippet marks what it asks with calls to host(e),
// accelerator(e) or unknown(e); every marked expression is checked.
#include "analysis/TensorPlace.h"
#include "analysis/TorchMatchers.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/Frontend/ASTUnit.h"
#include "clang/Tooling/Tooling.h"
#include <gtest/gtest.h>

using namespace clang;
using namespace clang::ast_matchers;
using clang::tidy::devcopy::Place;
using clang::tidy::devcopy::TensorPlaces;

namespace {

const char *const Prelude = R"cpp(
#include <torch/torch.h>
template <typename T> void host(const T &);
template <typename T> void accelerator(const T &);
template <typename T> void unknown(const T &);
)cpp";

struct Marked {
  std::string Want;
  std::string Text;
  Place Got;
};

/// Parses \p Code after the prelude and answers every marker.
std::vector<Marked> places(const std::string &Code) {
  std::unique_ptr<ASTUnit> AST = tooling::buildASTFromCodeWithArgs(
      Prelude + Code,
      {"-std=c++17", "-isystem", DEVCOPY_MOCK_DIR, "-resource-dir",
       DEVCOPY_RESOURCE_DIR},
      "input.cpp");
  EXPECT_TRUE(AST);
  EXPECT_FALSE(AST->getDiagnostics().hasErrorOccurred());
  ASTContext &Ctx = AST->getASTContext();
  TensorPlaces Places(Ctx);
  std::vector<Marked> Out;
  auto Calls = match(findAll(callExpr(callee(functionDecl(hasAnyName(
                                          "host", "accelerator", "unknown"))))
                                 .bind("c")),
                     Ctx);
  for (const BoundNodes &N : Calls) {
    const auto *C = N.getNodeAs<CallExpr>("c");
    const Expr *Arg = C->getArg(0);
    const Expr *Inner = tidy::devcopy::ignoreConversions(Arg);
    bool IsDevice = tidy::devcopy::isDeviceType(Inner->getType()) ||
                    tidy::devcopy::isTensorOptionsType(Inner->getType());
    Place P = IsDevice ? Places.ofDevice(Arg) : Places.ofTensor(Arg);
    Out.push_back(
        {C->getDirectCallee()->getNameAsString(),
         tidy::devcopy::sourceText(Arg, Ctx) + "' at line " +
             std::to_string(Ctx.getSourceManager().getPresumedLineNumber(
                 C->getBeginLoc())),
         P});
  }
  EXPECT_FALSE(Out.empty());
  return Out;
}

void expectAll(const std::string &Code) {
  for (const Marked &M : places(Code))
    EXPECT_EQ(M.Want, tidy::devcopy::placeName(M.Got).str())
        << "for '" << M.Text;
}

TEST(TensorPlace, DeviceConstantsAndStrings) {
  expectAll(R"cpp(
void f(torch::Device param) {
  accelerator(torch::kCUDA);
  accelerator(torch::Device(torch::kCUDA, 1));
  accelerator(torch::Device("cuda:0"));
  host(torch::Device("cpu"));
  host(torch::kCPU);
  accelerator(torch::TensorOptions().dtype(torch::kHalf).device(torch::kCUDA));
  unknown(param);
  torch::Device picked = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  accelerator(picked);
}
)cpp");
}

TEST(TensorPlace, DeviceVariableAssignedOnlyTheCpu) {
  expectAll(R"cpp(
void f(bool gpu) {
  torch::Device a = torch::kCPU;
  host(a);
  torch::Device b = torch::kCPU;
  if (gpu)
    b = torch::Device(torch::kCUDA);
  accelerator(b);
  const bool cpu_only = true;
  torch::Device c(cpu_only ? torch::kCPU : torch::kCUDA);
  host(c);
  torch::Device d(std::string("cu") + "da");
  accelerator(d);
}
)cpp");
}

TEST(TensorPlace, TensorsFollowTheirOps) {
  expectAll(R"cpp(
void f(torch::Tensor in) {
  torch::Device dev(torch::kCUDA);
  auto x = torch::zeros({2, 2});
  host(x);
  host(torch::ones({3}, torch::kFloat));
  accelerator(torch::ones({3}, torch::TensorOptions().device(dev)));
  auto y = x.to(dev);
  accelerator(y);
  accelerator(y.sum() + x);
  accelerator(torch::zeros_like(y));
  host(torch::zeros_like(x));
  accelerator(torch::cat({y, x}));
  host(y.cpu());
  accelerator(x.cuda().relu());
  accelerator(x.to(y));
  unknown(in);
  host(in.cpu().to(torch::kDouble));
  accelerator(in.to(dev).to(torch::kHalf));
  accelerator(x.to(y.device()));
}
)cpp");
}

TEST(TensorPlace, ReachingDefinitions) {
  expectAll(R"cpp(
void f(bool c, torch::Device dev) {
  torch::Tensor x = torch::zeros({4});
  host(x);
  x = x.cuda();
  accelerator(x);
  torch::Tensor y = torch::zeros({4});
  if (c)
    y = y.cuda();
  unknown(y);
  torch::Tensor z = torch::zeros({4});
  for (int i = 0; i < 3; ++i) {
    unknown(z);
    z = z.cuda();
  }
  unknown(z); // the loop may not run
  torch::Tensor w = torch::zeros({4});
  while (c) {
    w = w.cuda();
    accelerator(w);
  }
}
)cpp");
}

TEST(TensorPlace, ProgramFixedToTheCpu) {
  expectAll(R"cpp(
torch::Tensor load();
void train(torch::Tensor batch, torch::Device device) {
  host(batch);
  host(device);
  host(load().to(device));
}
int main() {
  torch::Device device(torch::kCPU);
  train(load(), device);
}
)cpp");
}

TEST(TensorPlace, ConstantFlagChoosesTheCpu) {
  expectAll(R"cpp(
const bool cpu_only = true;
torch::Tensor load();
int main() {
  torch::Device device = cpu_only ? torch::kCPU : torch::kCUDA;
  host(load());
  host(device);
}
)cpp");
}

TEST(TensorPlace, GlobalDeviceAssignedInMain) {
  expectAll(R"cpp(
torch::Device device(torch::kCPU);
torch::Tensor load();
void step() { accelerator(device); accelerator(load().to(device)); }
int main() {
  if (torch::cuda::is_available())
    device = torch::Device(torch::kCUDA);
  step();
}
)cpp");
}

TEST(TensorPlace, OptionsWithoutADevice) {
  expectAll(R"cpp(
void f(torch::Tensor x) {
  auto dev = torch::Device(torch::kCUDA);
  auto g = x.to(dev);
  auto opts = torch::TensorOptions().dtype(torch::kHalf);
  accelerator(g.to(opts));
  accelerator(g.to(torch::kHalf).unsqueeze(0));
  host(torch::zeros({2}, opts));
  accelerator(torch::one_hot(g).to(torch::kBool).to(dev));
  accelerator(torch::randn_like(g));
}
)cpp");
}

TEST(TensorPlace, RuntimeChoiceIsAnAccelerator) {
  expectAll(R"cpp(
torch::Tensor load();
int main() {
  torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  unknown(load());
  accelerator(device);
  accelerator(load().to(device).view({2, 2}));
}
)cpp");
}

TEST(TensorPlace, ParametersFromEveryKindOfCall) {
  expectAll(R"cpp(
torch::Tensor load();
struct Printer {
  explicit Printer(torch::Tensor t) { host(t); }
  void show(const torch::Tensor &t) { host(t); }
  void operator()(torch::Tensor t) const { host(t); }
};
void byPointer(const torch::Tensor *t) { host(*t); host(t->sum()); }
void byMutablePointer(torch::Tensor *t) { unknown(*t); }
void mixed(torch::Tensor t) { unknown(t); }
void f() {
  torch::Tensor x = load().cpu();
  Printer p(x);
  p.show(x.cpu());
  p(x);
  Printer{load().cpu()};
  auto each = [](torch::Tensor t) { host(t); };
  each(x);
  auto onDevice = [](torch::Tensor t) { unknown(t); };
  onDevice(x.cuda());
  mixed(x);
  mixed(x.cuda());
  // Last: taking x's address ends what is known of it.
  byPointer(&x);
  byMutablePointer(&x);
}
)cpp");
}

TEST(TensorPlace, DownloadOnlyWhereTheCodeRunsOnAnAccelerator) {
  expectAll(R"cpp(
torch::Tensor load();
void f(torch::Device dev, bool verbose) {
  torch::Tensor a = load();
  if (!dev.is_cpu())
    a = a.cpu();
  host(a);
  torch::Tensor b = load();
  if (dev.is_cuda()) {
    b = b.detach().cpu();
  }
  host(b);
  torch::Tensor c = load();
  if (dev.type() != torch::kCPU)
    c = c.cpu();
  host(c);
  torch::Tensor d = load();
  if (verbose)
    d = d.cpu(); // not a test of where the code runs
  unknown(d);
  torch::Tensor e = load();
  if (!dev.is_cpu())
    e = load().cpu(); // another tensor: e's own may be anywhere
  unknown(e);
  torch::Tensor g = load();
  if (dev.is_cpu())
    g = g.cpu(); // the download is on the host branch
  unknown(g);
}
)cpp");
}

TEST(TensorPlace, ReboundParameters) {
  expectAll(R"cpp(
torch::Tensor load();
void downloaded(torch::Tensor t) {
  unknown(t);
  t = t.cpu();
  host(t);
}
void guarded(torch::Tensor t) {
  if (t.is_cuda())
    t = t.cpu();
  host(t);
}
void maybe(torch::Tensor t, bool verbose) {
  if (verbose)
    t = t.cpu();
  unknown(t);
}
void fromHostCallers(torch::Tensor t, int n) {
  for (int i = 0; i < n; ++i)
    t = t.relu();
  host(t);
  t = t.cuda();
  accelerator(t);
}
void f() { fromHostCallers(load().cpu(), 2); }
)cpp");
}

} // namespace
