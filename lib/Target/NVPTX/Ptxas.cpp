//===- Ptxas.cpp - Cubins from the PTX of gpu.binary ops ------------------===//
//
// MLIR serializes NVVM to PTX in-process; a cubin needs NVIDIA's ptxas. The
// PTX stays in the binary (the driver JITs it for any newer GPU) and the
// cubin is added next to it, so the runtime can pick per device.
//
//===----------------------------------------------------------------------===//

#include "tessel/Target/Passes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELPTXAS
#include "tessel/Target/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// The first ptxas in `toolkit`/bin, $CUDA_HOME/bin, $CUDA_ROOT/bin,
/// /usr/local/cuda/bin, PATH; every place looked at is added to `tried`.
std::string findPtxas(StringRef toolkit, SmallVectorImpl<std::string> &tried) {
  SmallVector<std::string> roots;
  if (!toolkit.empty())
    roots.push_back(toolkit.str());
  for (const char *env : {"CUDA_HOME", "CUDA_ROOT"})
    if (std::optional<std::string> dir = llvm::sys::Process::GetEnv(env))
      roots.push_back(*dir);
  roots.push_back("/usr/local/cuda");
  for (const std::string &root : roots) {
    SmallString<256> path(root);
    llvm::sys::path::append(path, "bin", "ptxas");
    tried.push_back(path.str().str());
    if (llvm::sys::fs::can_execute(path))
      return path.str().str();
  }
  tried.push_back("ptxas on PATH");
  if (llvm::ErrorOr<std::string> onPath =
          llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  return "";
}

struct TesselPtxasPass : public tessel::impl::TesselPtxasBase<TesselPtxasPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::BinaryOp> binaries;
    module.walk([&](gpu::BinaryOp op) { binaries.push_back(op); });
    if (binaries.empty())
      return;
    SmallVector<std::string> tried;
    std::string ptxas = findPtxas(toolkit, tried);
    if (ptxas.empty()) {
      InFlightDiagnostic diag = required ? module.emitError()
                                         : module.emitWarning();
      diag << "ptxas not found (tried " << llvm::join(tried, ", ")
           << "); " << (required ? "cannot build" : "not building") << " "
           << arch << " cubins";
      if (required)
        signalPassFailure();
      return;
    }
    for (gpu::BinaryOp binary : binaries)
      if (failed(addCubins(binary, ptxas)))
        return signalPassFailure();
  }

  LogicalResult addCubins(gpu::BinaryOp binary, StringRef ptxas) {
    SmallVector<Attribute> objects(binary.getObjects().begin(),
                                   binary.getObjects().end());
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Assembly)
        continue;
      FailureOr<std::string> cubin =
          assemble(binary, ptxas, object.getObject().getValue());
      if (failed(cubin))
        return failure();
      auto cubinTarget = NVVM::NVVMTargetAttr::get(
          &getContext(), target.getO(), target.getTriple(), arch,
          target.getFeatures(), target.getFlags(), target.getLink());
      objects.push_back(gpu::ObjectAttr::get(
          &getContext(), cubinTarget, gpu::CompilationTarget::Binary,
          StringAttr::get(&getContext(), *cubin), object.getProperties(),
          object.getKernels()));
    }
    binary.setObjectsAttr(ArrayAttr::get(&getContext(), objects));
    return success();
  }

  /// ptxas -arch=<arch> on `ptx`; the cubin bytes.
  FailureOr<std::string> assemble(gpu::BinaryOp binary, StringRef ptxas,
                                  StringRef ptx) {
    SmallString<128> ptxPath, cubinPath, logPath;
    for (auto [suffix, path] :
         {std::make_pair("ptx", &ptxPath), std::make_pair("cubin", &cubinPath),
          std::make_pair("log", &logPath)})
      if (llvm::sys::fs::createTemporaryFile("tessel", suffix, *path))
        return binary.emitError("cannot create a temporary file for ptxas");
    llvm::FileRemover removePtx(ptxPath), removeCubin(cubinPath),
        removeLog(logPath);
    {
      std::error_code ec;
      llvm::raw_fd_ostream out(ptxPath, ec);
      if (ec)
        return binary.emitError() << "cannot write " << ptxPath << ": "
                                  << ec.message();
      // The serialized PTX ends with a NUL; ptxas wants text only.
      out << ptx.rtrim(StringRef("\0", 1));
    }
    std::string archFlag = "-arch=" + arch;
    SmallVector<StringRef> args = {ptxas, archFlag, "-O3"};
    if (verbose)
      args.push_back("-v");
    args.append({"-o", cubinPath, ptxPath});
    std::optional<StringRef> redirects[] = {std::nullopt, logPath.str(),
                                            logPath.str()};
    std::string error;
    int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                       /*SecondsToWait=*/0,
                                       /*MemoryLimit=*/0, &error);
    auto log = llvm::MemoryBuffer::getFile(logPath);
    StringRef logText = log ? (*log)->getBuffer().trim() : StringRef();
    if (rc != 0)
      return binary.emitError() << ptxas << " " << archFlag << " failed ("
                                << (error.empty() ? "exit " + std::to_string(rc)
                                                  : error)
                                << "): " << logText;
    if (verbose)
      binary.emitRemark() << "ptxas " << archFlag << ": " << logText;
    auto cubin = llvm::MemoryBuffer::getFile(cubinPath, /*IsText=*/false);
    if (!cubin)
      return binary.emitError() << "ptxas wrote no cubin: "
                                << cubin.getError().message();
    return (*cubin)->getBuffer().str();
  }
};

} // namespace
