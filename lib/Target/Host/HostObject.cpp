//===- HostObject.cpp - Host kernels as a loadable shared object ----------===//

#include "tessel/Target/HostObject.h"
#include "tessel/Target/Linker.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
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

  SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream out(object);
    llvm::legacy::PassManager codegen;
    if (machine->addPassesToEmitFile(codegen, out, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return module.emitError("the host target cannot emit object files");
    codegen.run(*llvmModule);
  }
  SmallVector<std::string> libraries;
  if (std::string libm = findLibm(); !libm.empty())
    libraries.push_back(libm);
  return linkSharedObject([&] { return module.emitError(); }, "the host kernel",
                          options.lldPath, object, libraries);
}
