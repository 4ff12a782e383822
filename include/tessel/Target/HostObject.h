//===- HostObject.h - Host kernels as a loadable shared object --*- C++ -*-===//
//
// The last step of the host target: an LLVM-dialect module (the output of
// the host pipeline) becomes an optimised ELF shared object that the runtime
// dlopens. Code generation runs in-process through the LLVM TargetMachine;
// linking runs ld.lld (from the LLVM install) as a subprocess.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TARGET_HOSTOBJECT_H
#define TESSEL_TARGET_HOSTOBJECT_H

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace mlir::tessel {

struct HostObjectOptions {
  /// -mcpu for the host code. x86-64-v3 (AVX2, FMA, F16C) runs on every
  /// machine the project targets and lets LLVM vectorize the inner loops.
  std::string cpu = "x86-64-v3";
  /// ld.lld to link with; empty means the one next to the LLVM tools.
  std::string lldPath;
};

/// Registers the LLVM IR translations the host target needs.
void registerHostTranslations(DialectRegistry &registry);

/// Compiles `module` (LLVM dialect only) into shared-object bytes. Emits an
/// error on `module` and fails if translation, code generation or linking
/// fails; the linker's output is part of the message.
FailureOr<std::vector<uint8_t>>
emitHostSharedObject(ModuleOp module, const HostObjectOptions &options);

} // namespace mlir::tessel

#endif // TESSEL_TARGET_HOSTOBJECT_H
