//===- Linker.h - Shared objects linked by ld.lld ---------------*- C++ -*-===//
//
// Host kernels (ELF x86-64 .so) and AMD kernels (hsaco, an ELF shared object
// for amdgcn) both come out of `ld.lld -shared`, run as a subprocess: the
// LLVM install ships it (lld-22), and it is the only tool either needs.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_TARGET_LINKER_H
#define TESSEL_TARGET_LINKER_H

#include "mlir/IR/Diagnostics.h"

#include <vector>

namespace mlir::tessel {

/// The ld.lld next to the LLVM tools this build used.
StringRef getDefaultLld();

/// Links `object` (the bytes of a relocatable object; `what` names it in
/// messages) with `ld.lld -shared` plus `extraInputs` (libraries); `lld`
/// empty means getDefaultLld(). On failure, reports through `emitError` the
/// linker used and its output.
FailureOr<std::vector<uint8_t>>
linkSharedObject(function_ref<InFlightDiagnostic()> emitError, StringRef what,
                 StringRef lld, ArrayRef<char> object,
                 ArrayRef<std::string> extraInputs = {});

} // namespace mlir::tessel

#endif // TESSEL_TARGET_LINKER_H
