//===- Templates.h - GPU kernel templates of tessel ops ---------*- C++ -*-===//
//
// A template writes the body of one gpu.func for one tessel op, against a
// TargetInfo. The pass (TesselToGPU.cpp) creates the function with the
// runtime's parameters and hands the template the argument memrefs.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_LIB_CONVERSION_TESSELTOGPU_TEMPLATES_H
#define TESSEL_LIB_CONVERSION_TESSELTOGPU_TEMPLATES_H

#include "tessel/Conversion/Utils/KernelParams.h"
#include "tessel/Dialect/Tessel/IR/KernelSignature.h"
#include "tessel/Dialect/Tessel/IR/TesselOps.h"
#include "tessel/Target/TargetInfo.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

#include <array>

namespace mlir::tessel {

/// One grid dimension: ceildiv(symbols[symbol] * mul + add, div), or
/// ceildiv(add, div) when symbol < 0 (the bundle's launch-dim encoding).
struct GridDim {
  int symbol = -1;
  int64_t mul = 1;
  int64_t add = 1;
  int64_t div = 1;
};

/// ceildiv(dim * perUnit, div): a grid dimension over one signature dim
/// (a shape symbol, or a constant), e.g. the tokens of a row-wise kernel.
/// A dim of 0 gives 0 blocks: the runtime then launches nothing.
inline GridDim gridOver(const KernelDim &dim, int64_t perUnit, int64_t div) {
  if (dim.symbol < 0)
    return GridDim{-1, 1, dim.constant * perUnit, div};
  return GridDim{dim.symbol, dim.mul * perUnit, dim.add * perUnit, div};
}

struct LaunchGeometry {
  std::array<GridDim, 3> grid;
  std::array<int32_t, 3> block = {1, 1, 1};
  /// Dynamic shared memory per block, in bytes.
  int64_t sharedBytes = 0;
};

/// What a template works with. The builder is at the start of the kernel's
/// entry block, which ends with gpu.return.
struct KernelContext {
  const KernelSignature &sig;
  /// The argument memrefs, in signature order.
  SmallVector<Value> args;
  /// The shape symbols as i64, in signature order.
  SmallVector<Value> symbols;
  const TargetInfo &target;
  /// Shared-memory pipeline depth of main loops.
  int64_t stages;
  /// The kernel, which takes the tensor maps after the shape symbols.
  gpu::GPUFuncOp kernel;
  SmallVector<TensorMapSpec> tensorMaps;

  /// The memref of `operand`, one of the kernel function's arguments (null
  /// for an absent optional operand); a scalar operand's value as is.
  Value arg(Value operand) const {
    if (!operand)
      return Value();
    return args[argIndex(operand)];
  }
  /// The kernel argument number of `operand` (a tensor map's `arg`).
  unsigned argIndex(Value operand) const {
    return cast<BlockArgument>(operand).getArgNumber();
  }
  /// Dimension `d` of `operand` as the signature has it (symbol or constant).
  const KernelDim &dim(Value operand, unsigned d) const {
    return sig.args[argIndex(operand)].dims[d];
  }
  /// Dimension `d` of `operand` as an index value built at `b`: its
  /// symbol's value times mul plus add, or the constant.
  Value dimValue(OpBuilder &b, Value operand, unsigned d) const;
  /// The softmax scale operand times log2(e), built where `b` is (the
  /// kernel's entry): attention templates score in base 2 (exp2).
  Value scaleLog2(OpBuilder &b, Value scale) const;
  /// Appends a tensor-map parameter to the kernel (a generic pointer to the
  /// CUtensorMap the runtime passes by value) and returns it.
  Value addTensorMap(TensorMapSpec spec);
};

/// Ragged-M grouped matmul, B stacked or a pointer table, with or without
/// trans_b. Emits an error
/// naming the constraint for the cases it does not cover.
FailureOr<LaunchGeometry> buildGroupedMatmul(OpBuilder &b, GroupedMatmulOp op,
                                             KernelContext &ctx);

/// Whether the Hopper main loop (GroupedMatmulSm90.cpp: TMA, mbarrier
/// ring, warp-specialised wgmma) serves `op` on `target`: stacked b or a
/// pointer table (with trans_b; without, N and K multiples of 64), 16-bit
/// operands, no
/// tessel.gpu_tile override, on a target with warpgroup MMA. Other forms
/// use the sm80 main loop there.
bool hasGroupedMatmulSm90(GroupedMatmulOp op, const TargetInfo &target);
FailureOr<LaunchGeometry> buildGroupedMatmulSm90(OpBuilder &b,
                                                 GroupedMatmulOp op,
                                                 KernelContext &ctx);

/// Whether the Hopper flash-attention kernel (PrefillSm90.cpp: TMA,
/// mbarrier ring, warp-specialised wgmma) serves `op` on `target`: 16-bit
/// operands, head dims multiples of 64 up to 256, a target with warpgroup
/// MMA. Else the sm80 template.
bool hasPrefillAttentionSm90(PrefillAttentionOp op, const TargetInfo &target);
FailureOr<LaunchGeometry> buildPrefillAttentionSm90(OpBuilder &b,
                                                    PrefillAttentionOp op,
                                                    KernelContext &ctx);
/// The same kernel for paged_attention with cu_seqlens (extend's cached
/// context, whole and split form): NHD caches whose block size and the K/V
/// tile share a divisor of at least 8 rows (one TMA box per page piece).
/// Else the sm80 template.
bool hasPagedQueriesSm90(PagedAttentionOp op, const TargetInfo &target);
FailureOr<LaunchGeometry> buildPagedQueriesSm90(OpBuilder &b,
                                                PagedAttentionOp op,
                                                KernelContext &ctx);

/// Whether the Hopper main loop serves `op` on `target` (16-bit operands, N
/// a multiple of 64, no tessel.gpu_tile override, a target with warpgroup
/// MMA); else the sm80 main loop.
bool hasGroupedMatmulWgradSm90(GroupedMatmulWgradOp op,
                               const TargetInfo &target);
FailureOr<LaunchGeometry> buildGroupedMatmulWgradSm90(OpBuilder &b,
                                                      GroupedMatmulWgradOp op,
                                                      KernelContext &ctx);

/// Ragged-K grouped matmul (the MoE weight gradient): one block per output
/// tile of each group; empty groups write zeros.
FailureOr<LaunchGeometry> buildGroupedMatmulWgrad(OpBuilder &b,
                                                  GroupedMatmulWgradOp op,
                                                  KernelContext &ctx);

/// Paged decode attention on tensor cores: one block per request, KV head
/// and split. decode_attention reads each request's whole context;
/// paged_attention (one query per request: no cu_seqlens) in its split form
/// writes the split-KV partials.
FailureOr<LaunchGeometry> buildPagedDecode(OpBuilder &b, DecodeAttentionOp op,
                                           KernelContext &ctx);
FailureOr<LaunchGeometry> buildPagedDecode(OpBuilder &b, PagedAttentionOp op,
                                           KernelContext &ctx);

/// Varlen (causal) flash attention of prefill_attention on tensor cores:
/// query-row tiles of every request in one list, one block per tile and
/// query head.
FailureOr<LaunchGeometry> buildPrefillAttention(OpBuilder &b,
                                                PrefillAttentionOp op,
                                                KernelContext &ctx);

/// paged_attention with cu_seqlens (extend's context chunks): the prefill
/// template with keys read from the paged cache, whole context or split-form
/// windows, no causal mask.
FailureOr<LaunchGeometry> buildPagedQueries(OpBuilder &b, PagedAttentionOp op,
                                            KernelContext &ctx);

/// Absorbed MLA decode (whole context or split form): one block per group
/// of 16 heads, request and split.
/// Whether the Hopper MLA decode (MlaDecodeSm90.cpp: TMA pages, wgmma, the
/// latent output split over two consumer warpgroups) serves `op` on
/// `target`: no window, head and latent dims whole 64-column chunks (the
/// latent dims an even number of them, at most 512), pages whole boxes of
/// a 64-token tile or whole tiles. Else the sm80 template.
bool hasMlaDecodeSm90(MLADecodeOp op, const TargetInfo &target);
FailureOr<LaunchGeometry> buildMlaDecodeSm90(OpBuilder &b, MLADecodeOp op,
                                             KernelContext &ctx);
FailureOr<LaunchGeometry> buildMlaDecode(OpBuilder &b, MLADecodeOp op,
                                         KernelContext &ctx);

/// tessel.lse_merge: one lane per 16-byte chunk of each (token, head) row.
FailureOr<LaunchGeometry> buildLseMerge(OpBuilder &b, LseMergeOp op,
                                        KernelContext &ctx);

/// tessel.lse_merge_n: like lse_merge, each lane folding the P partials of
/// its chunk in one online pass.
FailureOr<LaunchGeometry> buildLseMergeN(OpBuilder &b, LseMergeNOp op,
                                         KernelContext &ctx);

/// tessel.reshape_and_cache, both layouts: one lane per 16-byte chunk of
/// the new tokens' K and V rows.
FailureOr<LaunchGeometry> buildReshapeAndCache(OpBuilder &b,
                                               ReshapeAndCacheOp op,
                                               KernelContext &ctx);

/// The MoE routing glue: tessel.expert_histogram and tessel.expert_sort as
/// one block of 1024 threads (E static, at most 1024; the sort stable and
/// deterministic), tessel.moe_permute and tessel.moe_unpermute as one lane
/// per 16-byte chunk of each row (MoEGlue.cpp says more).
FailureOr<LaunchGeometry> buildMoEGlue(OpBuilder &b, Operation *op,
                                       KernelContext &ctx);

/// tessel.swiglu (one lane per 16-byte chunk of act) and
/// tessel.swiglu_backward (one warp per expert-sorted row, its routing
/// weight's gradient summed by a shuffle tree); Swiglu.cpp says more.
FailureOr<LaunchGeometry> buildSwiglu(OpBuilder &b, Operation *op,
                                      KernelContext &ctx);

} // namespace mlir::tessel

#endif // TESSEL_LIB_CONVERSION_TESSELTOGPU_TEMPLATES_H
