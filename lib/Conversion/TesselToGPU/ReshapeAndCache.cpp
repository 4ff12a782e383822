//===- ReshapeAndCache.cpp - KV-cache write kernel template ---------------===//
//
// tessel.reshape_and_cache: token t's K and V rows (k [T, Hkv, Dk], v [T,
// Hkv, Dv]) go to slot slot_mapping[t] (block slot / BS, offset slot % BS)
// of the paged caches, in the nhd or the shuffled layout; a negative slot
// (padding) or one past the cache (>= NB * BS) is skipped. AttentionToLoops
// (host) is the oracle.
//
// Work decomposition. A pure copy, so every lane moves one 16-byte chunk
// (E = 16 / element size elements, the shuffle width x): a token's work is
// the Hkv * Dk / E chunks of its K row, then the Hkv * Dv / E of its V row,
// and lane i of the grid takes chunk i of that token-major sequence, so
// consecutive lanes load consecutive 16-byte chunks of k and v (one token's
// K and V rows are contiguous). The grid is 1-D, ceil(T * chunks per token /
// 256) blocks of 256 lanes, from the token count alone (CUDA-graph
// capturable; T = 0 launches nothing). Each lane reads its token's slot
// itself (the lanes of a token read the same word). No shared memory.
//
// Stores: in nhd a token's chunks are contiguous in the cache too
// ([NB, BS, Hkv, D]), so the stores are 16-byte and coalesced like the
// loads. Shuffled K ([NB, Hkv, Dk/x, BS, x]) keeps a token's x consecutive
// head-dim elements together: one 16-byte store per chunk, consecutive
// chunks BS * 16 bytes apart. Shuffled V ([NB, Hkv, BS/x, Dv, x]) puts
// element (offset, d) at [block, h, offset / x, d, offset % x]: the x
// elements of 16 bytes there belong to x different tokens, so each lane
// stores its chunk's elements one by one, x elements apart. Gathering the x
// tokens of a 16-byte group into one lane would need the inverse of the
// slot mapping; the strided stores are simple and each token is written
// once.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

constexpr int32_t kBlockThreads = 256;

class ReshapeAndCacheBuilder : public KernelBuilder {
public:
  ReshapeAndCacheBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                         KVLayout layout, int64_t kvHeads, int64_t kDim,
                         int64_t vDim, int64_t blockSize, int64_t chunk)
      : KernelBuilder(b, loc, target), layout(layout), kvHeads(kvHeads),
        kDim(kDim), vDim(vDim), blockSize(blockSize), E(chunk) {}

  /// Chunks of one token: its K row, then its V row.
  int64_t chunksPerToken() const { return kvHeads * (kDim + vDim) / E; }

  void build(Value k, Value v, Value kCache, Value vCache, Value slots);

private:
  /// Copies chunk `j` (of the Hkv * dim / E of a row) of token `token`'s
  /// row of `src` ([T, Hkv, dim]) to `offset` of `block` in `cache`.
  void copyChunk(Value src, Value cache, bool isKey, int64_t dim,
                 Value token, Value j, Value block, Value offset);

  KVLayout layout;
  int64_t kvHeads, kDim, vDim, blockSize, E;
};

void ReshapeAndCacheBuilder::build(Value k, Value v, Value kCache,
                                   Value vCache, Value slots) {
  Value item = add(mul(blockId(gpu::Dimension::x), kBlockThreads), threadId());
  Value token = divu(item, chunksPerToken());
  Value j = remu(item, chunksPerToken());
  Value tokens = memref::DimOp::create(b, loc, k, 0);
  ifThen(lt(token, tokens), [&] {
    // The slot, sign-extended: a negative one (padding) compares as huge
    // against the cache's slot count, like one past the cache.
    Value slot = toIndex(memref::LoadOp::create(b, loc, slots, token));
    Value numSlots =
        mul(memref::DimOp::create(b, loc, kCache, 0).getResult(), blockSize);
    Value inCache = ult(slot, numSlots);
    ifThen(inCache, [&] {
      Value block = divu(slot, blockSize), offset = remu(slot, blockSize);
      int64_t kChunks = kvHeads * kDim / E;
      Value isKey = lt(j, idx(kChunks));
      auto ifKey = scf::IfOp::create(b, loc, isKey, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifKey.thenBlock());
      copyChunk(k, kCache, /*isKey=*/true, kDim, token, j, block, offset);
      b.setInsertionPointToStart(ifKey.elseBlock());
      copyChunk(v, vCache, /*isKey=*/false, vDim, token, sub(j, idx(kChunks)),
                block, offset);
    });
  });
}

void ReshapeAndCacheBuilder::copyChunk(Value src, Value cache, bool isKey,
                                       int64_t dim, Value token, Value j,
                                       Value block, Value offset) {
  int64_t rowChunks = dim / E;
  Value head = divu(j, rowChunks), chunk = remu(j, rowChunks);
  Value d = mul(chunk, E);
  Value data = loadVector(src, {token, head, d}, E);
  if (layout == KVLayout::NHD) {
    storeVector(data, cache, {block, offset, head, d});
    return;
  }
  // Shuffled, x = E: K [NB, Hkv, Dk/x, BS, x] holds the chunk contiguously.
  if (isKey) {
    storeVector(data, cache, {block, head, chunk, offset, idx(0)});
    return;
  }
  // V [NB, Hkv, BS/x, Dv, x]: element (offset, d + e) one by one.
  Value group = divu(offset, E), within = remu(offset, E);
  for (int64_t e = 0; e < E; ++e) {
    Value value = vector::ExtractOp::create(b, loc, data, e);
    memref::StoreOp::create(b, loc, value, cache,
                            ValueRange{block, head, group, add(d, e), within});
  }
}

} // namespace

FailureOr<LaunchGeometry>
mlir::tessel::buildReshapeAndCache(OpBuilder &b, ReshapeAndCacheOp op,
                                   KernelContext &ctx) {
  auto kType = cast<MemRefType>(op.getK().getType());
  Type elem = kType.getElementType();
  int64_t kvHeads = kType.getDimSize(1), kDim = kType.getDimSize(2);
  int64_t vDim = cast<MemRefType>(op.getV().getType()).getDimSize(2);
  if (failed(checkChunkRows(op, "K head dim", kDim, elem)) ||
      failed(checkChunkRows(op, "V head dim", vDim, elem)))
    return failure();
  // A chunk is the shuffle width: 16 bytes.
  int64_t chunk = getShuffleWidth(elem);
  int64_t blockSize = getCacheBlockSize(
      cast<MemRefType>(op.getKCache().getType()), op.getLayout());
  ReshapeAndCacheBuilder builder(b, op.getLoc(), ctx.target, op.getLayout(),
                                 kvHeads, kDim, vDim, blockSize, chunk);
  builder.build(ctx.arg(op.getK()), ctx.arg(op.getV()),
                ctx.arg(op.getKCache()), ctx.arg(op.getVCache()),
                ctx.arg(op.getSlotMapping()));
  LaunchGeometry geometry;
  geometry.grid[0] = gridOver(ctx.dim(op.getK(), 0),
                              builder.chunksPerToken(), kBlockThreads);
  geometry.block = {kBlockThreads, 1, 1};
  return geometry;
}
