//===- AttentionToLoops.cpp - Attention ops as reference loops ------------===//
//
// The host lowering of the attention ops: plain loops that are the numerical
// oracle for the GPU kernels. Every query row is computed by one routine,
// RowAttention::attendRow, an fp32 two-pass softmax over one or more spans of
// keys. The ops differ only in which keys a row sees and where they live (the
// new-token k/v operands or a paged cache); KeySpan describes exactly that.
//
// Every index read from device memory (cu_seqlens, lengths, block ids, slots)
// is clamped or checked before it addresses memory, and every loop bound over
// tokens or requests is the smallest matching dim of the operands: garbage
// metadata gives garbage numbers, never an out-of-bounds access.
//
// Ops are emitted one statement at a time wherever two arguments of a call
// would both emit IR: C++ leaves argument evaluation order unspecified, and
// the IR (and its FileCheck tests) should not depend on the compiler.
//
//===----------------------------------------------------------------------===//

#include "LoopUtils.h"

#include "llvm/ADT/Sequence.h"

#include <functional>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::host;

namespace {

using arith::CmpIPredicate;

int64_t staticDim(Value memref, unsigned d) {
  return cast<MemRefType>(memref.getType()).getDimSize(d);
}

//===----------------------------------------------------------------------===//
// Key spans
//===----------------------------------------------------------------------===//

/// Loads element `d` (along the head dim) of one key or value row, as f32.
using ElementLoader = std::function<Value(Value d)>;

/// Emits, at the insertion point, what finding row `j` of a key or value
/// sequence takes (e.g. a block-table lookup), and returns the loader of its
/// elements. Splitting the two keeps the row lookup out of the loop over the
/// head dim, so that loop is a plain strided walk LLVM can vectorize.
using RowLocator = std::function<ElementLoader(Value j)>;

/// `count` consecutive keys a query row attends to, j in [0, count), with the
/// rows of their keys and values.
struct KeySpan {
  Value count;
  RowLocator keys;
  RowLocator values;
};

/// Keys and values `first + j` of KV head `kvHead` of the new-token operands
/// k `[T, Hkv, Dqk]` and v `[T, Hkv, Dv]`.
KeySpan newTokenSpan(LoopBuilder &lb, Value k, Value v, Value first,
                     Value count, Value kvHead) {
  auto rowsOf = [&lb, first, kvHead](Value kv) -> RowLocator {
    return [&lb, first, kvHead, kv](Value j) -> ElementLoader {
      Value token = lb.add(first, j);
      return [&lb, kv, token, kvHead](Value d) {
        return lb.loadF32(kv, {token, kvHead, d});
      };
    };
  };
  return {count, rowsOf(k), rowsOf(v)};
}

//===----------------------------------------------------------------------===//
// Paged caches
//===----------------------------------------------------------------------===//

/// A pair of paged K/V caches in one of the KVLayouts; addresses element `d`
/// of KV head `kvHead` of the token at (block, offset). A rank-3 NHD cache
/// `[NB, BS, D]` (the MLA latent cache) has one KV head and no head dim.
class PagedCache {
public:
  PagedCache(LoopBuilder &lb, Value k, Value v, KVLayout layout)
      : k(k), v(v), layout(layout) {
    auto type = cast<MemRefType>(k.getType());
    blockSize = getCacheBlockSize(type, layout);
    kvHeads = type.getRank() == 3 ? 1 : getCacheKVHeads(type, layout);
    valueDim = staticDim(v, type.getRank() == 3 ? 2 : 3);
    x = getShuffleWidth(type.getElementType());
    numBlocks = lb.minDim({{k, 0}, {v, 0}});
  }

  Value k, v;
  KVLayout layout;
  int64_t blockSize, kvHeads, valueDim;
  int64_t x;
  /// The blocks both caches hold.
  Value numBlocks;

  /// K `[blk, off, kvh, d]` (NHD) or `[blk, kvh, d / x, off, d % x]`.
  SmallVector<Value> keyIndices(LoopBuilder &lb, Value block, Value offset,
                                Value kvHead, Value d) const {
    if (layout == KVLayout::NHD)
      return nhdIndices(k, block, offset, kvHead, d);
    Value vx = lb.idx(x);
    return {block, kvHead, lb.div(d, vx), offset, lb.rem(d, vx)};
  }

  /// V `[blk, off, kvh, d]` (NHD) or `[blk, kvh, off / x, d, off % x]`.
  SmallVector<Value> valueIndices(LoopBuilder &lb, Value block, Value offset,
                                  Value kvHead, Value d) const {
    if (layout == KVLayout::NHD)
      return nhdIndices(v, block, offset, kvHead, d);
    Value vx = lb.idx(x);
    return {block, kvHead, lb.div(offset, vx), d, lb.rem(offset, vx)};
  }

private:
  static SmallVector<Value> nhdIndices(Value cache, Value block, Value offset,
                                       Value kvHead, Value d) {
    if (cast<MemRefType>(cache.getType()).getRank() == 3)
      return {block, offset, d};
    return {block, offset, kvHead, d};
  }
};

/// The number of cached tokens a request can address through a block table
/// `[B, MB]`: MB * BS, or 0 when the caches hold no block (then no block id,
/// however clamped, is valid). Context lengths are clamped to it.
Value contextCapacity(LoopBuilder &lb, const PagedCache &cache,
                      Value blockTable) {
  Value maxBlocks = lb.dim(blockTable, 1);
  Value capacity = lb.mul(maxBlocks, lb.idx(cache.blockSize));
  Value zero = lb.idx(0);
  return lb.select(lb.cmp(CmpIPredicate::sgt, cache.numBlocks, zero), capacity,
                   zero);
}

/// Cached tokens `first + j` of request `request`, KV head `kvHead`: token
/// `i` lives in block `block_table[request, i / BS]` (clamped to a valid
/// block) at offset `i % BS`. `first + count` must not exceed the clamped
/// context length, which keeps `i / BS` inside the block table row.
KeySpan cachedSpan(LoopBuilder &lb, const PagedCache &cache, Value blockTable,
                   Value request, Value first, Value count, Value kvHead) {
  auto rowsOf = [&lb, &cache, blockTable, request, first,
                 kvHead](bool isKey) -> RowLocator {
    return [&lb, &cache, blockTable, request, first, kvHead,
            isKey](Value j) -> ElementLoader {
      Value token = lb.add(first, j);
      Value bs = lb.idx(cache.blockSize);
      Value id = lb.loadIndex(blockTable, {request, lb.div(token, bs)});
      Value lastBlock = lb.sub(cache.numBlocks, lb.idx(1));
      Value block = lb.clamp(id, lb.idx(0), lastBlock);
      Value offset = lb.rem(token, bs);
      Value memref = isKey ? cache.k : cache.v;
      return [&lb, &cache, memref, block, offset, kvHead, isKey](Value d) {
        return lb.loadF32(
            memref, isKey ? cache.keyIndices(lb, block, offset, kvHead, d)
                          : cache.valueIndices(lb, block, offset, kvHead, d));
      };
    };
  };
  return {count, rowsOf(/*isKey=*/true), rowsOf(/*isKey=*/false)};
}

//===----------------------------------------------------------------------===//
// Requests
//===----------------------------------------------------------------------===//

/// The number of requests `cu_seqlens` `[B + 1]` describes.
Value numRequestsOf(LoopBuilder &lb, Value cuSeqlens) {
  Value entries = lb.dim(cuSeqlens, 0);
  Value requests = lb.sub(entries, lb.idx(1));
  return lb.max(requests, lb.idx(0));
}

/// Tokens [start, end) of request `request`: cu_seqlens[request] and
/// cu_seqlens[request + 1], clamped so that 0 <= start <= end <= numTokens.
std::pair<Value, Value> requestTokens(LoopBuilder &lb, Value cuSeqlens,
                                      Value request, Value numTokens) {
  Value first = lb.loadIndex(cuSeqlens, request);
  Value start = lb.clamp(first, lb.idx(0), numTokens);
  Value end = lb.clamp(lb.loadIndex(cuSeqlens, lb.add(request, lb.idx(1))),
                       start, numTokens);
  return {start, end};
}

//===----------------------------------------------------------------------===//
// One query row
//===----------------------------------------------------------------------===//

/// The queries and outputs of one attention op and the scratch buffers its
/// rows share. q is `[T, Hq, Dqk]`, out `[T, Hq, Dv]`, lse (optional)
/// `[Hq, T]`.
class RowAttention {
public:
  /// Allocates the scratch for rows that see at most `maxKeys` keys.
  RowAttention(LoopBuilder &lb, Value q, Value out, Value lse, int64_t kvHeads,
               int64_t vDim, Value scale, Value maxKeys)
      : lb(lb), q(q), out(out), lse(lse), qHeads(staticDim(q, 1)),
        qkDim(staticDim(q, 2)), vDim(vDim), groupSize(qHeads / kvHeads),
        scale(scale) {
    Type f32 = lb.builder().getF32Type();
    qRow = lb.alloc(MemRefType::get({qkDim}, f32), {});
    acc = lb.alloc(MemRefType::get({vDim}, f32), {});
    scores = lb.alloc(MemRefType::get({ShapedType::kDynamic}, f32), maxKeys);
  }

  /// Frees the scratch; call after the last row.
  void release() {
    lb.dealloc(qRow);
    lb.dealloc(acc);
    lb.dealloc(scores);
  }

  /// Attends every query head of token `token`; `spansFor(kvHead)` gives the
  /// keys a head reading KV head `kvHead` sees.
  void attendToken(Value token,
                   function_ref<SmallVector<KeySpan>(Value kvHead)> spansFor) {
    lb.forLoop(lb.idx(0), lb.idx(qHeads), [&](Value head) {
      // GQA: query head h reads KV head h / (Hq / Hkv).
      Value kvHead = lb.div(head, lb.idx(groupSize));
      attendRow(token, head, spansFor(kvHead));
    });
  }

private:
  /// out[token, head] = softmax(scale * q . K^T) V over the concatenated
  /// spans, and lse[head, token] the natural log of the softmax denominator
  /// (with the max added back). Two passes over the keys, so that every
  /// exponent is taken relative to the true row maximum:
  ///   1. s_j = scale * (q . k_j) into `scores`, m = max_j s_j;
  ///   2. p_j = exp(s_j - m), l = sum_j p_j, acc = sum_j p_j v_j;
  /// then out = acc / l and lse = m + log(l).
  void attendRow(Value token, Value head, ArrayRef<KeySpan> spans) {
    Value zero = lb.idx(0);
    // Widen the query row once rather than once per key.
    lb.forLoop(zero, lb.idx(qkDim), [&](Value d) {
      lb.storeF32(lb.loadF32(q, {token, head, d}), qRow, {d});
    });

    // Pass 1: the scores of all spans, one after the other in `scores`, and
    // their maximum.
    SmallVector<Value> spanBases;
    Value numKeys = zero, maxScore = lb.negInf();
    for (const KeySpan &span : spans) {
      Value base = numKeys;
      spanBases.push_back(base);
      auto scoreKey = [&](Value j, ValueRange max) -> SmallVector<Value> {
        Value dotProduct = dot(span.keys(j));
        Value score = lb.fmul(dotProduct, scale);
        lb.storeF32(score, scores, {lb.add(base, j)});
        return {lb.fmax(max.front(), score)};
      };
      maxScore = lb.forLoop(zero, span.count, maxScore, scoreKey).front();
      numKeys = lb.add(numKeys, span.count);
    }

    // Pass 2: the softmax denominator and the weighted sum of the values,
    // accumulated over the keys in order.
    lb.forLoop(zero, lb.idx(vDim),
               [&](Value d) { lb.storeF32(lb.f32(0.0), acc, {d}); });
    Value denom = lb.f32(0.0);
    for (auto i : llvm::seq(spans.size())) {
      const KeySpan &span = spans[i];
      Value base = spanBases[i];
      auto weighValue = [&](Value j, ValueRange sum) -> SmallVector<Value> {
        Value p =
            lb.exp(lb.fsub(lb.loadF32(scores, {lb.add(base, j)}), maxScore));
        accumulate(p, span.values(j));
        return {lb.fadd(sum.front(), p)};
      };
      denom = lb.forLoop(zero, span.count, denom, weighValue).front();
    }

    // A row that sees no key has m = -inf and l = 0: dividing by 1 instead
    // keeps its output at zero and its lse is -inf, never NaN.
    Value empty = lb.cmp(CmpIPredicate::eq, numKeys, zero);
    Value divisor = lb.select(empty, lb.f32(1.0), denom);
    lb.forLoop(zero, lb.idx(vDim), [&](Value d) {
      lb.storeF32(lb.fdiv(lb.loadF32(acc, {d}), divisor), out,
                  {token, head, d});
    });
    if (lse) {
      Value logSumExp = lb.fadd(maxScore, lb.log(denom));
      Value negInf = lb.negInf();
      lb.storeF32(lb.select(empty, negInf, logSumExp), lse, {head, token});
    }
  }

  /// The widened query row . key, along the head dim. Its association is
  /// free (mulAddFree), so the reduction vectorizes.
  Value dot(const ElementLoader &key) {
    auto step = [&](Value d, ValueRange sum) -> SmallVector<Value> {
      Value qElement = lb.loadF32(qRow, {d});
      Value kElement = key(d);
      return {lb.mulAddFree(sum.front(), qElement, kElement)};
    };
    return lb.forLoop(lb.idx(0), lb.idx(qkDim), lb.f32(0.0), step).front();
  }

  /// acc += p * value, along the head dim. Over the keys this is a dot
  /// product too (sum_j p_j v_j[d]), whose order the semantics leave free.
  void accumulate(Value p, const ElementLoader &value) {
    lb.forLoop(lb.idx(0), lb.idx(vDim), [&](Value d) {
      Value accElement = lb.loadF32(acc, {d});
      Value vElement = value(d);
      lb.storeF32(lb.mulAddFree(accElement, p, vElement), acc, {d});
    });
  }

  LoopBuilder &lb;
  Value q, out, lse;
  int64_t qHeads, qkDim, vDim, groupSize;
  /// The softmax scale, an f32 kernel argument.
  Value scale;
  /// f32 scratch: the widened query row [Dqk], the scores [maxKeys] and the
  /// output accumulator [Dv].
  Value qRow, scores, acc;
};

/// Queries of each request over (a window of) its cached context, with no
/// causal mask since every cached token precedes the queries. This is
/// paged_attention; decode_attention and mla_decode are its special cases.
/// Without `cuSeqlens` request b has the single query q[b]; without a window
/// it sees its whole context `contextLens[b]`. With `causal` the context is
/// the whole sequence and the queries its last tokens: each sees the
/// window's keys up to its own position.
void lowerPagedQueries(LoopBuilder &lb, Value q, Value out, Value lse,
                       const PagedCache &cache, int64_t vDim, Value scale,
                       Value blockTable, Value cuSeqlens, Value contextLens,
                       Value windowStart, Value windowLen,
                       bool causal = false) {
  Value zero = lb.idx(0), one = lb.idx(1);
  Value numTokens = lb.minDim({{q, 0}, {out, 0}, {lse, 1}});
  Value numRequests = lb.minDim({{contextLens, 0}, {blockTable, 0}});
  numRequests =
      lb.min(numRequests, cuSeqlens ? numRequestsOf(lb, cuSeqlens) : numTokens);
  Value capacity = contextCapacity(lb, cache, blockTable);
  RowAttention attention(lb, q, out, lse, cache.kvHeads, vDim, scale, capacity);
  lb.forLoop(zero, numRequests, [&](Value request) {
    Value length = lb.clamp(lb.loadIndex(contextLens, request), zero, capacity);
    // The window [start, start + len), clamped into [0, length).
    Value first = zero, count = length;
    if (windowStart) {
      first = lb.clamp(windowStart, zero, length);
      count = lb.clamp(windowLen, zero, lb.sub(length, first));
    }
    Value start = request, end = lb.add(request, one);
    if (cuSeqlens)
      std::tie(start, end) = requestTokens(lb, cuSeqlens, request, numTokens);
    lb.forLoop(start, end, [&](Value token) {
      Value visible = count;
      if (causal) {
        // Position length - (end - token): keys [0, position] are visible.
        Value seen = lb.sub(lb.add(lb.sub(length, end), lb.add(token, one)),
                            first);
        visible = lb.clamp(seen, zero, count);
      }
      attention.attendToken(token, [&](Value kvHead) {
        return SmallVector<KeySpan>{cachedSpan(lb, cache, blockTable, request,
                                               first, visible, kvHead)};
      });
    });
  });
  attention.release();
}

/// Copies k/v row `[token, kvHead, :]` into its cache slot.
void copyRowToCache(LoopBuilder &lb, Value src, Value token, Value kvHead,
                    Value cache,
                    function_ref<SmallVector<Value>(Value d)> indices) {
  OpBuilder &b = lb.builder();
  lb.forLoop(lb.idx(0), lb.idx(staticDim(src, 2)), [&](Value d) {
    Value element =
        memref::LoadOp::create(b, lb.location(), src, {token, kvHead, d});
    memref::StoreOp::create(b, lb.location(), element, cache, indices(d));
  });
}

} // namespace

//===----------------------------------------------------------------------===//
// The lowerings
//===----------------------------------------------------------------------===//

LogicalResult host::lowerPrefillAttention(PrefillAttentionOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value k = op.getK(), v = op.getV(), cu = op.getCuSeqlens();
  Value numTokens = lb.minDim(
      {{op.getQ(), 0}, {k, 0}, {v, 0}, {op.getOut(), 0}, {op.getLse(), 1}});
  RowAttention attention(lb, op.getQ(), op.getOut(), op.getLse(),
                         staticDim(k, 1), staticDim(v, 2), op.getScale(),
                         numTokens);
  lb.forLoop(lb.idx(0), numRequestsOf(lb, cu), [&](Value request) {
    Value start, end;
    std::tie(start, end) = requestTokens(lb, cu, request, numTokens);
    lb.forLoop(start, end, [&](Value token) {
      // Causal: token i sees tokens [start, i] of its request.
      Value last = op.getCausal() ? lb.add(token, lb.idx(1)) : end;
      Value count = lb.sub(last, start);
      attention.attendToken(token, [&](Value kvHead) {
        return SmallVector<KeySpan>{
            newTokenSpan(lb, k, v, start, count, kvHead)};
      });
    });
  });
  attention.release();
  return success();
}

LogicalResult host::lowerDecodeAttention(DecodeAttentionOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  PagedCache cache(lb, op.getKCache(), op.getVCache(), op.getLayout());
  lowerPagedQueries(lb, op.getQ(), op.getOut(), op.getLse(), cache,
                    cache.valueDim, op.getScale(), op.getBlockTable(),
                    /*cuSeqlens=*/nullptr, op.getSeqLens(),
                    /*windowStart=*/nullptr, /*windowLen=*/nullptr);
  return success();
}

LogicalResult host::lowerPagedAttention(PagedAttentionOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  PagedCache cache(lb, op.getKCache(), op.getVCache(), op.getLayout());
  if (!op.isSplit()) {
    lowerPagedQueries(lb, op.getQ(), op.getOut(), op.getLse(), cache,
                      cache.valueDim, op.getScale(), op.getBlockTable(),
                      op.getCuSeqlens(), op.getContextLens(),
                      op.getWindowStart(), op.getWindowLen(), op.getCausal());
    return success();
  }
  // Split form: partial p is the window [p W, (p + 1) W) of every request,
  // W = ceil(MB / P) * BS, written to out[p] and lse[p].
  Value out = op.getOut(), lse = op.getLse();
  Value partials = lb.minDim({{out, 0}, {lse, 0}});
  Value maxBlocks = lb.dim(op.getBlockTable(), 1);
  Value perSplit = lb.mul(lb.ceilDiv(maxBlocks, lb.max(partials, lb.idx(1))),
                          lb.idx(cache.blockSize));
  lb.forLoop(lb.idx(0), partials, [&](Value p) {
    lowerPagedQueries(lb, op.getQ(), lb.slice(out, p), lb.slice(lse, p),
                      cache, cache.valueDim, op.getScale(), op.getBlockTable(),
                      op.getCuSeqlens(), op.getContextLens(),
                      lb.mul(p, perSplit), perSplit, op.getCausal());
  });
  return success();
}

LogicalResult host::lowerMLADecode(MLADecodeOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  // One latent KV head: the keys are whole cache rows, the values their
  // first L dims (the latent part), read from the same cache.
  Value latent = op.getKvCache();
  PagedCache cache(lb, latent, latent, KVLayout::NHD);
  Value out = op.getOut(), lse = op.getLse();
  int64_t latentDim = staticDim(out, op.isSplit() ? 3 : 2);
  if (!op.isSplit()) {
    lowerPagedQueries(lb, op.getQ(), out, lse, cache, latentDim,
                      op.getScale(), op.getBlockTable(), /*cuSeqlens=*/nullptr,
                      op.getSeqLens(), op.getWindowStart(), op.getWindowLen());
    return success();
  }
  // Split form: partial p over the window [p W, (p + 1) W).
  Value partials = lb.minDim({{out, 0}, {lse, 0}});
  Value maxBlocks = lb.dim(op.getBlockTable(), 1);
  Value perSplit = lb.mul(lb.ceilDiv(maxBlocks, lb.max(partials, lb.idx(1))),
                          lb.idx(cache.blockSize));
  lb.forLoop(lb.idx(0), partials, [&](Value p) {
    lowerPagedQueries(lb, op.getQ(), lb.slice(out, p), lb.slice(lse, p), cache,
                      latentDim, op.getScale(), op.getBlockTable(),
                      /*cuSeqlens=*/nullptr, op.getSeqLens(),
                      lb.mul(p, perSplit), perSplit);
  });
  return success();
}

LogicalResult host::lowerExtendAttention(ExtendAttentionOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value k = op.getK(), v = op.getV(), cu = op.getCuSeqlens();
  Value blockTable = op.getBlockTable(), contextLens = op.getContextLens();
  PagedCache cache(lb, op.getKCache(), op.getVCache(), op.getLayout());
  Value zero = lb.idx(0), one = lb.idx(1);
  Value numTokens = lb.minDim(
      {{op.getQ(), 0}, {k, 0}, {v, 0}, {op.getOut(), 0}, {op.getLse(), 1}});
  Value numRequests = lb.minDim({{contextLens, 0}, {blockTable, 0}});
  numRequests = lb.min(numRequests, numRequestsOf(lb, cu));
  Value capacity = contextCapacity(lb, cache, blockTable);
  RowAttention attention(lb, op.getQ(), op.getOut(), op.getLse(), cache.kvHeads,
                         cache.valueDim, op.getScale(),
                         lb.add(capacity, numTokens));
  lb.forLoop(zero, numRequests, [&](Value request) {
    Value length = lb.clamp(lb.loadIndex(contextLens, request), zero, capacity);
    Value start, end;
    std::tie(start, end) = requestTokens(lb, cu, request, numTokens);
    lb.forLoop(start, end, [&](Value token) {
      // New token i sees the whole cached context, then the new tokens of its
      // request up to itself.
      Value newCount = lb.add(lb.sub(token, start), one);
      attention.attendToken(token, [&](Value kvHead) {
        return SmallVector<KeySpan>{
            cachedSpan(lb, cache, blockTable, request, zero, length, kvHead),
            newTokenSpan(lb, k, v, start, newCount, kvHead)};
      });
    });
  });
  attention.release();
  return success();
}

LogicalResult host::lowerReshapeAndCache(ReshapeAndCacheOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value k = op.getK(), v = op.getV(), slots = op.getSlotMapping();
  PagedCache cache(lb, op.getKCache(), op.getVCache(), op.getLayout());
  Value numTokens = lb.minDim({{k, 0}, {v, 0}, {slots, 0}});
  Value numSlots = lb.mul(cache.numBlocks, lb.idx(cache.blockSize));
  lb.forLoop(lb.idx(0), numTokens, [&](Value token) {
    Value slot = lb.loadIndex(slots, token);
    // Padding tokens have a negative slot; a slot past the cache is garbage.
    // Both are skipped.
    lb.ifThen(lb.inBounds(slot, numSlots), [&] {
      Value bs = lb.idx(cache.blockSize);
      Value block = lb.div(slot, bs), offset = lb.rem(slot, bs);
      lb.forLoop(lb.idx(0), lb.idx(cache.kvHeads), [&](Value kvHead) {
        copyRowToCache(lb, k, token, kvHead, cache.k, [&](Value d) {
          return cache.keyIndices(lb, block, offset, kvHead, d);
        });
        copyRowToCache(lb, v, token, kvHead, cache.v, [&](Value d) {
          return cache.valueIndices(lb, block, offset, kvHead, d);
        });
      });
    });
  });
  return success();
}
