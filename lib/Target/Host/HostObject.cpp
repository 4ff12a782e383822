//===- HostObject.cpp - Host kernels as a loadable shared object ----------===//

#include "tessel/Target/HostObject.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using namespace mlir::tessel;

void mlir::tessel::registerHostTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

namespace {

/// A temporary file removed when it goes out of scope.
struct TempFile {
  explicit TempFile(StringRef suffix) {
    if (llvm::sys::fs::createTemporaryFile("tessel", suffix, path))
      path.clear();
  }
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
  SmallString<128> path;
};

std::unique_ptr<llvm::TargetMachine> createHostMachine(StringRef cpu,
                                                       std::string &error) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, /*Features=*/"", options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
}

/// The system's libm, so the shared object records its dependency on it
/// (exp/log calls) instead of relying on the loading process to have it.
std::string findLibm() {
  for (const char *p : {"/lib/x86_64-linux-gnu/libm.so.6",
                        "/usr/lib/x86_64-linux-gnu/libm.so.6",
                        "/lib64/libm.so.6", "/usr/lib64/libm.so.6"})
    if (llvm::sys::fs::exists(p))
      return p;
  return "";
}

} // namespace

FailureOr<std::vector<uint8_t>>
mlir::tessel::emitHostSharedObject(ModuleOp module,
                                   const HostObjectOptions &options) {
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createHostMachine(options.cpu, error);
  if (!machine)
    return module.emitError() << "cannot create the host target machine for "
                                 "cpu '"
                              << options.cpu << "': " << error;

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed");
  llvmModule->setTargetTriple(machine->getTargetTriple());
  llvmModule->setDataLayout(machine->createDataLayout());

  if (llvm::Error err = makeOptimizingTransformer(
          /*optLevel=*/3, /*sizeLevel=*/0, machine.get())(llvmModule.get()))
    return module.emitError() << "LLVM optimisation failed: "
                              << llvm::toString(std::move(err));

  TempFile object(".o"), shared(".so"), log(".log");
  if (object.path.empty() || shared.path.empty() || log.path.empty())
    return module.emitError("cannot create temporary files for linking");
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(object.path, ec);
    if (ec)
      return module.emitError() << "cannot write " << object.path << ": "
                                << ec.message();
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, out, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return module.emitError("the host target cannot emit object files");
    codegen.run(*llvmModule);
  }

  std::string lld = options.lldPath;
  if (lld.empty())
    lld = std::string(TESSEL_LLVM_TOOLS_DIR) + "/ld.lld";
  SmallVector<StringRef> args = {lld, "-shared", "--no-undefined-version",
                                 "-o", shared.path, object.path};
  std::string libm = findLibm();
  if (!libm.empty())
    args.push_back(libm);
  std::optional<StringRef> redirects[] = {std::nullopt, log.path.str(),
                                          log.path.str()};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(lld, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/120, 0, &execError);
  if (rc != 0) {
    auto logText = llvm::MemoryBuffer::getFile(log.path);
    return module.emitError()
           << "linking the host kernel with '" << lld << "' failed ("
           << (execError.empty() ? "exit code " + std::to_string(rc)
                                 : execError)
           << "): " << (logText ? (*logText)->getBuffer() : "");
  }
  auto bytes = llvm::MemoryBuffer::getFile(shared.path);
  if (!bytes)
    return module.emitError() << "cannot read the linked kernel "
                              << shared.path;
  StringRef data = (*bytes)->getBuffer();
  return std::vector<uint8_t>(data.begin(), data.end());
}
