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
    numbers, never an out-of-bounds access. The one exception is a
    grouped-matmul pointer table: its entries are addresses the kernel must
    trust.

    Post-condition: no tessel op remains.
  }];
  // LLVM: pointer-table operands become memrefs through an LLVM-dialect
  // descriptor.
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def TesselHostEntry : Pass<"tessel-host-entry", "ModuleOp"> {
  let summary = "Give each kernel function a `void (void **params)` entry";
  let description = [{
    For every public function (each must be a kernel: one tessel op on the
    function's arguments; private functions are left alone), adds an
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

def TesselToGPU : Pass<"tessel-to-gpu", "ModuleOp"> {
  let summary = "Turn kernel functions into GPU kernels from target-neutral "
                "templates";
  let description = [{
    Replaces every kernel function (a public `func.func` whose body is one
    tessel op) by a `gpu.module @<name>` holding one `gpu.func @<name>
    kernel` written with gpu/arith/scf/memref/vector ops plus the few
    target operations that `TargetInfo` (include/tessel/Target) emits for
    the chosen chip (nvgpu/nvvm on NVIDIA). The kernel takes the runtime's
    parameters: each buffer's data pointer (`!llvm.ptr`), then each shape
    symbol as i64, in kernel-signature order. Its launch geometry is
    recorded on it: `tessel.grid` (three `[symbol, mul, add, div]` entries:
    `grid[i] = ceildiv(symbol * mul + add, div)`, symbol -1 for a constant),
    `known_block_size` and `tessel.shared_bytes` (dynamic shared memory).

    Templates: `tessel.grouped_matmul` (ragged-M; `b` stacked `[G, N, K]`
    with `trans_b` or `[G, K, N]` without, or a pointer table of per-group
    matrices): one block per (M-tile of a group, N-tile); each block finds
    its group on the device from `group_offsets`, so the grid depends on T
    and G only. Rows past the last group's end are written with zeros by
    the same kernel. K and N must be multiples of 8 (16-byte rows), and
    without `trans_b` the tile's N a multiple of 64 (the swizzle). Tile
    64x256x32 with 1x4 warps (128x128x32 with 2x2 warps where two 64x256
    blocks do not fit a CU's LDS: gfx942) unless the op carries
    `tessel.gpu_tile = {tile_m, tile_n, tile_k, warps_m, warps_n, stages}`.
    `tessel.grouped_matmul_wgrad` (ragged K): one block per (N-tile,
    M-tile, group) of `c [G, M, N]`, each over its group's rows, empty
    groups writing zeros; M and N multiples of 8; tile 128x128x32, 2x2
    warps. `tessel.lse_merge` and `tessel.lse_merge_n`: one lane per
    16-byte chunk of a (token, head) row (16 bytes of the narrowest
    element type, so the head dim must be a multiple of 8 for 16-bit
    types, 4 for f32), 256 lanes a block, a 1-D grid from T alone;
    `lse_merge_n` folds the P partials online in one pass, skipping the
    reads of empty ones. `tessel.reshape_and_cache` (both layouts): one
    lane per 16-byte chunk of a new token's K and V rows (head dims
    multiples of 16 bytes), a 1-D grid from T alone; padding slots and
    slots past the cache are skipped.

    Post-condition: no kernel function remains; the module is a
    `gpu.container_module` of one `gpu.module` per kernel.
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm80\"",
           "GPU chip to generate for (sm80, gfx942, gfx950)">,
    // 0: the target's default, 4 with async copies (measured best on the
    // H200, docs/performance.md), 2 when tiles go through registers.
    Option<"stages", "stages", "int64_t", /*default=*/"0",
           "Shared-memory pipeline stages of the matmul main loop (0: the "
           "target's default)">,
  ];
  let dependentDialects = ["::mlir::amdgpu::AMDGPUDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

#endif // TESSEL_CONVERSION_PASSES_TD
