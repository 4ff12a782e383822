//===- Passes.td - Tessel conversion passes ----------------*- tablegen -*-===//
#ifndef TESSEL_CONVERSION_PASSES_TD
#define TESSEL_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def TesselToHost : Pass<"tessel-to-host", "ModuleOp"> {
  let summary = "Lower tessel ops to reference loops (scf, memref, arith, math)";
  let description = [{
    The host lowering: every tessel op becomes plain loops with the exact
    semantics of its description, computed in fp32 (attention uses a two-pass
    softmax per query row; merges follow the LSE infinity rules). This is the
    numerical oracle for the GPU lowerings, so it favours clarity, with just
    enough care (fp32 accumulators, inner loops over contiguous head dims) to
    run a 4096-token attention in seconds.

    Device-resident metadata (sequence lengths, block tables, offsets, slots,
    ids) is clamped to the buffers it indexes, so bad metadata gives wrong
    numbers, never an out-of-bounds access.

    Post-condition: no tessel op remains.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def TesselHostEntry : Pass<"tessel-host-entry", "ModuleOp"> {
  let summary = "Give each kernel function a `void (void **params)` entry";
  let description = [{
    For every function marked as a kernel (`tessel.kernel`), adds an
    LLVM-dialect function `@<name>` taking the kernel parameters in the
    runtime's convention (`params[i]` points to the i-th value: each
    buffer's data pointer, then each shape symbol as i64; see
    docs/bundle-format.md) that rebuilds the memref descriptors and calls the
    kernel body, renamed `@<name>.impl` and made private.

    Post-condition: every kernel has an entry the runtime can call.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect"];
}

#endif // TESSEL_CONVERSION_PASSES_TD
