//===- Passes.h - Tessel target (serialization) passes ----------*- C++ -*-===//
#ifndef TESSEL_TARGET_PASSES_H
#define TESSEL_TARGET_PASSES_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tessel {

#define GEN_PASS_DECL
#include "tessel/Target/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessel/Target/Passes.h.inc"

/// Registers what gpu-module-to-binary needs to turn NVVM gpu.modules into
/// PTX: the LLVM IR translations of the dialects in them and the
/// #nvvm.target serialization interface.
void registerNVVMTranslations(DialectRegistry &registry);

/// The same for ROCDL gpu.modules (AMDGCN assembly) and #rocdl.target.
void registerROCDLTranslations(DialectRegistry &registry);

} // namespace mlir::tessel

#endif // TESSEL_TARGET_PASSES_H
