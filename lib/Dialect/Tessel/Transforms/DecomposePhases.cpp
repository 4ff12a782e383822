//===- DecomposePhases.cpp - Chunked extend and split-KV decode -----------===//
//
// Serving engines never run extend or long decode as one monolithic kernel:
// extend attends to its cached context a token budget at a time, and a long
// decode is split across workgroups. Both rest on the same algebra: attention
// over disjoint key sets merged exactly by log-sum-exp. This pass rewrites the
// two ops into those pieces.
//
// Chunk and split counts derive from the block table width (max blocks per
// request x block size), a shape, never from device-resident lengths: the
// rewritten code needs no host synchronisation. Chunks past a request's
// context see no key and merge as the identity (LSE -inf).
//
//===----------------------------------------------------------------------===//

#include "tessel/Dialect/Tessel/Transforms/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELDECOMPOSEPHASES
#include "tessel/Dialect/Tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// Shared pieces of the rewrites.
class Rewriter {
public:
  explicit Rewriter(Operation *op) : b(op), loc(op->getLoc()) {}

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value dim(Value v, unsigned d) { return memref::DimOp::create(b, loc, v, d); }

  /// max(1, ceildiv(block_table.dim(1) * block_size, tokensPerPiece)).
  Value pieceCount(Value blockTable, int64_t blockSize, int64_t tokensPerPiece) {
    Value capacity =
        arith::MulIOp::create(b, loc, dim(blockTable, 1), idx(blockSize));
    Value n = arith::CeilDivUIOp::create(b, loc, capacity, idx(tokensPerPiece));
    return arith::MaxUIOp::create(b, loc, n, idx(1));
  }

  /// f32 scratch `[tokens, heads, dim]` and its LSE `[heads, tokens]`.
  std::pair<Value, Value> partial(Value tokens, int64_t heads, int64_t dim) {
    auto f32 = b.getF32Type();
    int64_t dyn = ShapedType::kDynamic;
    Value o = memref::AllocOp::create(
        b, loc, MemRefType::get({dyn, heads, dim}, f32), ValueRange{tokens});
    Value lse = memref::AllocOp::create(
        b, loc, MemRefType::get({heads, dyn}, f32), ValueRange{tokens});
    return {o, lse};
  }

  /// Split-KV scratch `[P, B, heads, dim]` and `[P, heads, B]` (f32).
  std::pair<Value, Value> partials(Value count, Value requests, int64_t heads,
                                   int64_t dim) {
    auto f32 = b.getF32Type();
    int64_t dyn = ShapedType::kDynamic;
    Value o = memref::AllocOp::create(
        b, loc, MemRefType::get({dyn, dyn, heads, dim}, f32),
        ValueRange{count, requests});
    Value lse = memref::AllocOp::create(
        b, loc, MemRefType::get({dyn, heads, dyn}, f32),
        ValueRange{count, requests});
    return {o, lse};
  }

  /// Rank-reducing view of slice `p` of a split-KV scratch buffer.
  Value slice(Value buffer, Value p) {
    auto type = cast<MemRefType>(buffer.getType());
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes, strides(rank, b.getIndexAttr(1));
    offsets[0] = p;
    sizes.push_back(b.getIndexAttr(1));
    for (int64_t d = 1; d < rank; ++d) {
      if (type.isDynamicDim(d))
        sizes.push_back(dim(buffer, d));
      else
        sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
    }
    auto resultType = memref::SubViewOp::inferRankReducedResultType(
        type.getShape().drop_front(), type, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(resultType),
                                     buffer, offsets, sizes, strides);
  }

  /// for (i = 0; i < ub; ++i) body(i)
  void forLoop(Value ub, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, loc, idx(0), ub, idx(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  void dealloc(ArrayRef<Value> buffers) {
    for (Value v : buffers)
      memref::DeallocOp::create(b, loc, v);
  }

  OpBuilder b;
  Location loc;
};

int64_t staticDim(Value v, unsigned d) {
  return cast<MemRefType>(v.getType()).getDimSize(d);
}

int64_t cacheBlockSize(Value kCache, KVLayout layout) {
  return getCacheBlockSize(cast<MemRefType>(kCache.getType()), layout);
}

/// extend = causal attention of the new tokens + one windowed paged attention
/// per context chunk, each merged in place into an fp32 accumulator; the last
/// merge writes the op's outputs.
void decomposeExtend(ExtendAttentionOp op, int64_t chunkTokens) {
  Rewriter r(op);
  OpBuilder &b = r.b;
  Location loc = r.loc;
  int64_t heads = staticDim(op.getOut(), 1), vDim = staticDim(op.getOut(), 2);
  Value tokens = r.dim(op.getQ(), 0);
  // Lambdas below capture these, so no structured bindings (C++20).
  Value accO, accL, tmpO, tmpL;
  std::tie(accO, accL) = r.partial(tokens, heads, vDim);
  std::tie(tmpO, tmpL) = r.partial(tokens, heads, vDim);

  PrefillAttentionOp::create(b, loc, op.getQ(), op.getK(), op.getV(),
                             op.getCuSeqlens(), accO, accL, op.getScale(),
                             b.getUnitAttr());

  Value chunk = r.idx(chunkTokens);
  Value count = r.pieceCount(op.getBlockTable(),
                             cacheBlockSize(op.getKCache(), op.getLayout()),
                             chunkTokens);
  auto attendChunk = [&](Value c) {
    Value start = arith::MulIOp::create(b, loc, c, chunk);
    PagedAttentionOp::create(b, loc, op.getQ(), op.getKCache(), op.getVCache(),
                             op.getBlockTable(), op.getCuSeqlens(),
                             op.getContextLens(), tmpO, tmpL, start, chunk,
                             op.getScale(), op.getLayoutAttr());
  };
  Value last = arith::SubIOp::create(b, loc, count, r.idx(1));
  r.forLoop(last, [&](Value c) {
    attendChunk(c);
    LseMergeOp::create(b, loc, accO, accL, tmpO, tmpL, accO, accL);
  });
  attendChunk(last);
  LseMergeOp::create(b, loc, accO, accL, tmpO, tmpL, op.getOut(), op.getLse());
  r.dealloc({accO, accL, tmpO, tmpL});
  op.erase();
}

/// decode = one windowed partial per split into `[P, B, H, D]` scratch, then
/// one N-way merge. `emitPartial(start, len, o, lse)` writes one partial.
void decomposeSplitKV(
    Operation *op, Value q, Value blockTable, int64_t blockSize, Value out,
    Value lse, int64_t splitTokens,
    function_ref<void(Rewriter &, Value, Value, Value, Value)> emitPartial) {
  Rewriter r(op);
  int64_t heads = staticDim(out, 1), vDim = staticDim(out, 2);
  Value count = r.pieceCount(blockTable, blockSize, splitTokens);
  Value partO, partL;
  std::tie(partO, partL) = r.partials(count, r.dim(q, 0), heads, vDim);
  Value split = r.idx(splitTokens);
  r.forLoop(count, [&](Value p) {
    Value start = arith::MulIOp::create(r.b, r.loc, p, split);
    emitPartial(r, start, split, r.slice(partO, p), r.slice(partL, p));
  });
  LseMergeNOp::create(r.b, r.loc, partO, partL, out, lse);
  r.dealloc({partO, partL});
  op->erase();
}

void decomposeDecode(DecodeAttentionOp op, int64_t splitTokens) {
  decomposeSplitKV(
      op, op.getQ(), op.getBlockTable(),
      cacheBlockSize(op.getKCache(), op.getLayout()), op.getOut(), op.getLse(),
      splitTokens, [&](Rewriter &r, Value start, Value len, Value o, Value l) {
        PagedAttentionOp::create(r.b, r.loc, op.getQ(), op.getKCache(),
                                 op.getVCache(), op.getBlockTable(),
                                 /*cu_seqlens=*/Value(), op.getSeqLens(), o, l,
                                 start, len, op.getScale(),
                                 op.getLayoutAttr());
      });
}

void decomposeMLADecode(MLADecodeOp op, int64_t splitTokens) {
  decomposeSplitKV(
      op, op.getQ(), op.getBlockTable(), staticDim(op.getKvCache(), 1),
      op.getOut(), op.getLse(), splitTokens,
      [&](Rewriter &r, Value start, Value len, Value o, Value l) {
        MLADecodeOp::create(r.b, r.loc, op.getQ(), op.getKvCache(),
                            op.getBlockTable(), op.getSeqLens(), o, l, start,
                            len, op.getScale());
      });
}

struct DecomposePhasesPass
    : public tessel::impl::TesselDecomposePhasesBase<DecomposePhasesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (chunkTokens <= 0 || splitKvTokens < 0) {
      getOperation().emitError()
          << "tessel-decompose-phases: chunk-tokens must be positive and "
             "split-kv-tokens non-negative (got "
          << chunkTokens << ", " << splitKvTokens << ")";
      return signalPassFailure();
    }
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<ExtendAttentionOp, DecodeAttentionOp, MLADecodeOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto extend = dyn_cast<ExtendAttentionOp>(op))
        decomposeExtend(extend, chunkTokens);
      else if (auto decode = dyn_cast<DecodeAttentionOp>(op);
               decode && splitKvTokens > 0)
        decomposeDecode(decode, splitKvTokens);
      else if (auto mla = dyn_cast<MLADecodeOp>(op);
               mla && splitKvTokens > 0 && !mla.getWindowStart() &&
               !mla.isSplit())
        decomposeMLADecode(mla, splitKvTokens);
    }
  }
};

} // namespace
