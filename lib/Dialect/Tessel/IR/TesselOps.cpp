//===- TesselOps.cpp - Tessel op verifiers --------------------------------===//
//
// Each verifier names the operand and the constraint it breaks, so that a
// spec author can fix a kernel spec from the message alone. Sizes that the
// kernels are specialised on (heads, head dims, block size, top-k) must be
// static; token, request and block counts may be dynamic.
//
//===----------------------------------------------------------------------===//

#include "tessel/Dialect/Tessel/IR/TesselOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessel;

#include "tessel/Dialect/Tessel/IR/TesselOpsDialect.cpp.inc"
#include "tessel/Dialect/Tessel/IR/TesselEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "tessel/Dialect/Tessel/IR/TesselAttrs.cpp.inc"

void TesselDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "tessel/Dialect/Tessel/IR/TesselOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tessel/Dialect/Tessel/IR/TesselAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// KV cache geometry
//===----------------------------------------------------------------------===//

int64_t mlir::tessel::getShuffleWidth(Type elementType) {
  return 16 / (elementType.getIntOrFloatBitWidth() / 8);
}

int64_t mlir::tessel::getCacheBlockSize(MemRefType kCache, KVLayout layout) {
  // NHD: [NB, BS, Hkv, D]; shuffled: [NB, Hkv, D / x, BS, x].
  return kCache.getDimSize(layout == KVLayout::NHD ? 1 : 3);
}

int64_t mlir::tessel::getCacheKVHeads(MemRefType kCache, KVLayout layout) {
  return kCache.getDimSize(layout == KVLayout::NHD ? 2 : 1);
}

//===----------------------------------------------------------------------===//
// Verification helpers
//===----------------------------------------------------------------------===//

namespace {

/// Checks the memref operands of one op; every failure is an op error whose
/// message names the operand.
class Checker {
public:
  explicit Checker(Operation *op) : op(op) {}

  static MemRefType type(Value v) { return cast<MemRefType>(v.getType()); }
  static Type elem(Value v) { return type(v).getElementType(); }

  LogicalResult rank(Value v, StringRef name, int64_t rank) {
    if (type(v).getRank() != rank)
      return op->emitOpError() << "'" << name << "' must have rank " << rank
                               << ", got " << type(v).getRank();
    return success();
  }

  /// A float data operand: f32, f16 or bf16.
  LogicalResult floatData(Value v, StringRef name) {
    Type t = elem(v);
    if (!t.isF32() && !t.isF16() && !t.isBF16())
      return op->emitOpError() << "'" << name
                               << "' element type must be f32, f16 or bf16, got "
                               << t;
    return success();
  }

  LogicalResult sameElem(Value v, StringRef name, Value ref, StringRef refName) {
    if (elem(v) != elem(ref))
      return op->emitOpError() << "'" << name << "' element type must match '"
                               << refName << "' (" << elem(ref) << "), got "
                               << elem(v);
    return success();
  }

  /// Outputs may be written in the input type or, for partials, in f32.
  LogicalResult outElem(Value v, StringRef name, Value ref, StringRef refName) {
    if (elem(v) != elem(ref) && !elem(v).isF32())
      return op->emitOpError() << "'" << name << "' element type must be f32 or "
                               << "match '" << refName << "' (" << elem(ref)
                               << "), got " << elem(v);
    return success();
  }

  LogicalResult intElem(Value v, StringRef name, unsigned width) {
    if (!elem(v).isSignlessInteger(width))
      return op->emitOpError() << "'" << name << "' must be a memref of i"
                               << width << ", got " << elem(v);
    return success();
  }

  LogicalResult f32Elem(Value v, StringRef name) {
    if (!elem(v).isF32())
      return op->emitOpError() << "'" << name << "' must be a memref of f32, got "
                               << elem(v);
    return success();
  }

  /// A dim the kernels are specialised on.
  FailureOr<int64_t> staticDim(Value v, StringRef name, unsigned d,
                               StringRef what) {
    int64_t size = type(v).getDimSize(d);
    if (ShapedType::isDynamic(size)) {
      op->emitOpError() << "'" << name << "' dim " << d << " (" << what
                        << ") must be static";
      return failure();
    }
    return size;
  }

  /// Two dims that must agree; only checked when both are static.
  LogicalResult sameDim(Value a, StringRef aName, unsigned ad, Value b,
                        StringRef bName, unsigned bd, StringRef what) {
    int64_t x = type(a).getDimSize(ad), y = type(b).getDimSize(bd);
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return op->emitOpError() << "'" << aName << "' dim " << ad << " (" << what
                               << ") is " << x << " but '" << bName << "' dim "
                               << bd << " is " << y;
    return success();
  }

  /// A dim that must equal a known value (when static).
  LogicalResult dimIs(Value v, StringRef name, unsigned d, int64_t expected,
                      StringRef what) {
    int64_t size = type(v).getDimSize(d);
    if (!ShapedType::isDynamic(size) && size != expected)
      return op->emitOpError() << "'" << name << "' dim " << d << " (" << what
                               << ") must be " << expected << ", got " << size;
    return success();
  }

  /// A specialised dim that must be static and equal a known value: the
  /// host loops index with the known value, so a dynamic dim could disagree.
  LogicalResult staticDimIs(Value v, StringRef name, unsigned d,
                            int64_t expected, StringRef what) {
    if (failed(staticDim(v, name, d, what)))
      return failure();
    return dimIs(v, name, d, expected, what);
  }

  LogicalResult headDim(int64_t d, StringRef name) {
    if (d % 16 != 0 || d < 16 || d > 256)
      return op->emitOpError() << "head dim of '" << name << "' is " << d
                               << "; supported head dims are multiples of 16 "
                                  "from 16 to 256";
    return success();
  }

  LogicalResult headRatio(int64_t qHeads, int64_t kvHeads) {
    if (kvHeads <= 0 || qHeads % kvHeads != 0)
      return op->emitOpError() << "num_q_heads (" << qHeads
                               << ") must be a multiple of num_kv_heads ("
                               << kvHeads << ")";
    return success();
  }

  LogicalResult blockSize(int64_t bs) {
    if (bs <= 0 || bs % 16 != 0)
      return op->emitOpError() << "block size (" << bs
                               << ") must be a positive multiple of 16";
    return success();
  }

  Operation *op;
};

/// What a pair of paged caches says about the attention they serve.
struct CacheShape {
  int64_t blockSize, kvHeads, kHeadDim, vHeadDim;
};

/// Verifies K and V caches in `layout` (see the KVLayout docs).
FailureOr<CacheShape> verifyCaches(Checker &c, Value kc, Value vc,
                                   KVLayout layout) {
  if (failed(c.floatData(kc, "k_cache")) ||
      failed(c.sameElem(vc, "v_cache", kc, "k_cache")))
    return failure();
  CacheShape s;
  if (layout == KVLayout::NHD) {
    if (failed(c.rank(kc, "k_cache", 4)) || failed(c.rank(vc, "v_cache", 4)))
      return failure();
    auto bs = c.staticDim(kc, "k_cache", 1, "block_size");
    auto h = c.staticDim(kc, "k_cache", 2, "num_kv_heads");
    auto dk = c.staticDim(kc, "k_cache", 3, "head_dim");
    auto dv = c.staticDim(vc, "v_cache", 3, "head_dim");
    if (failed(bs) || failed(h) || failed(dk) || failed(dv))
      return failure();
    s = {*bs, *h, *dk, *dv};
    if (failed(c.sameDim(vc, "v_cache", 0, kc, "k_cache", 0, "num_blocks")) ||
        failed(c.dimIs(vc, "v_cache", 1, s.blockSize, "block_size")) ||
        failed(c.dimIs(vc, "v_cache", 2, s.kvHeads, "num_kv_heads")))
      return failure();
  } else {
    if (failed(c.rank(kc, "k_cache", 5)) || failed(c.rank(vc, "v_cache", 5)))
      return failure();
    int64_t x = getShuffleWidth(Checker::elem(kc));
    auto h = c.staticDim(kc, "k_cache", 1, "num_kv_heads");
    auto dkx = c.staticDim(kc, "k_cache", 2, "head_dim / x");
    auto bs = c.staticDim(kc, "k_cache", 3, "block_size");
    auto bsx = c.staticDim(vc, "v_cache", 2, "block_size / x");
    auto dv = c.staticDim(vc, "v_cache", 3, "head_dim");
    if (failed(h) || failed(dkx) || failed(bs) || failed(bsx) || failed(dv))
      return failure();
    s = {*bs, *h, *dkx * x, *dv};
    if (failed(c.dimIs(kc, "k_cache", 4, x, "x = 16 bytes / element size")) ||
        failed(c.dimIs(vc, "v_cache", 4, x, "x = 16 bytes / element size")) ||
        failed(c.sameDim(vc, "v_cache", 0, kc, "k_cache", 0, "num_blocks")) ||
        failed(c.dimIs(vc, "v_cache", 1, s.kvHeads, "num_kv_heads")) ||
        failed(c.dimIs(vc, "v_cache", 2, s.blockSize / x, "block_size / x")))
      return failure();
  }
  if (failed(c.blockSize(s.blockSize)))
    return failure();
  return s;
}

/// q `[T, Hq, Dqk]`, out `[T, Hq, Dv]` and the optional lse `[Hq, T]`, checked
/// against the KV heads and head dims the keys and values have.
LogicalResult verifyQueryAndOutput(Checker &c, Value q, Value out, Value lse,
                                   int64_t kvHeads, int64_t kHeadDim,
                                   int64_t vHeadDim, StringRef kName,
                                   bool split = false) {
  // The split form has a leading partial dimension on out and lse.
  unsigned s = split ? 1 : 0;
  if (failed(c.rank(q, "q", 3)) || failed(c.floatData(q, "q")) ||
      failed(c.rank(out, "out", 3 + s)) ||
      failed(c.outElem(out, "out", q, "q")))
    return failure();
  auto hq = c.staticDim(q, "q", 1, "num_q_heads");
  auto dq = c.staticDim(q, "q", 2, "head_dim");
  if (failed(hq) || failed(dq))
    return failure();
  if (*dq != kHeadDim)
    return c.op->emitOpError() << "head dim of 'q' (" << *dq
                               << ") must match the head dim of '" << kName
                               << "' (" << kHeadDim << ")";
  if (failed(c.headDim(*dq, "q")) || failed(c.headDim(vHeadDim, "v")) ||
      failed(c.headRatio(*hq, kvHeads)) ||
      failed(c.sameDim(out, "out", s, q, "q", 0, "tokens")) ||
      failed(c.staticDimIs(out, "out", 1 + s, *hq, "num_q_heads")) ||
      failed(c.staticDimIs(out, "out", 2 + s, vHeadDim, "v head dim")))
    return failure();
  if (!lse)
    return success();
  return failure(failed(c.rank(lse, "lse", 2 + s)) ||
                 failed(c.f32Elem(lse, "lse")) ||
                 failed(c.staticDimIs(lse, "lse", s, *hq, "num_q_heads")) ||
                 failed(c.sameDim(lse, "lse", 1 + s, q, "q", 0, "tokens")) ||
                 (split && failed(c.sameDim(lse, "lse", 0, out, "out", 0,
                                            "partials"))));
}

/// New-token k `[T, Hkv, Dqk]` and v `[T, Hkv, Dv]` of the same type and
/// token count as `ref` (q, or k itself); returns (Hkv, Dqk, Dv).
FailureOr<CacheShape> verifyNewKV(Checker &c, Value ref, StringRef refName,
                                  Value k, Value v) {
  // `ref`'s rank first: its dim 0 is read below.
  if (failed(c.rank(ref, refName, 3)) || failed(c.rank(k, "k", 3)) ||
      failed(c.rank(v, "v", 3)) || failed(c.floatData(ref, refName)) ||
      failed(c.sameElem(k, "k", ref, refName)) ||
      failed(c.sameElem(v, "v", ref, refName)))
    return failure();
  auto h = c.staticDim(k, "k", 1, "num_kv_heads");
  auto dk = c.staticDim(k, "k", 2, "head_dim");
  auto dv = c.staticDim(v, "v", 2, "head_dim");
  if (failed(h) || failed(dk) || failed(dv) ||
      failed(c.dimIs(v, "v", 1, *h, "num_kv_heads")) ||
      failed(c.sameDim(k, "k", 0, ref, refName, 0, "tokens")) ||
      failed(c.sameDim(v, "v", 0, ref, refName, 0, "tokens")))
    return failure();
  return CacheShape{0, *h, *dk, *dv};
}

/// A 1-D i32 buffer (cu_seqlens, seq_lens, ...).
LogicalResult verifyIndexVector(Checker &c, Value v, StringRef name) {
  return failure(failed(c.rank(v, name, 1)) || failed(c.intElem(v, name, 32)));
}

/// block_table `[B, MB]` and the per-request lengths `[B]`.
LogicalResult verifyPaging(Checker &c, Value blockTable, Value lens,
                           StringRef lensName) {
  if (failed(c.rank(blockTable, "block_table", 2)) ||
      failed(c.intElem(blockTable, "block_table", 32)) ||
      failed(verifyIndexVector(c, lens, lensName)))
    return failure();
  return c.sameDim(lens, lensName, 0, blockTable, "block_table", 0, "requests");
}

/// cu_seqlens `[B + 1]`: at least one entry.
LogicalResult verifyCuSeqlens(Checker &c, Value cu) {
  if (failed(verifyIndexVector(c, cu, "cu_seqlens")))
    return failure();
  int64_t n = Checker::type(cu).getDimSize(0);
  if (!ShapedType::isDynamic(n) && n < 1)
    return c.op->emitOpError("'cu_seqlens' must have at least one entry");
  return success();
}

/// cu_seqlens `[B + 1]` against per-request lengths `[B]`.
LogicalResult verifyCuSeqlens(Checker &c, Value cu, Value lens,
                              StringRef lensName) {
  if (failed(verifyCuSeqlens(c, cu)))
    return failure();
  int64_t n = Checker::type(cu).getDimSize(0);
  int64_t b = Checker::type(lens).getDimSize(0);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(b) && n != b + 1)
    return c.op->emitOpError() << "'cu_seqlens' must have one more entry than '"
                               << lensName << "' (" << b << "), got " << n;
  return success();
}

LogicalResult verifyWindow(Operation *op, Value start, Value len) {
  if (static_cast<bool>(start) != static_cast<bool>(len))
    return op->emitOpError("window needs both a start and a length");
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult PrefillAttentionOp::verify() {
  Checker c(*this);
  auto kv = verifyNewKV(c, getQ(), "q", getK(), getV());
  if (failed(kv) || failed(verifyCuSeqlens(c, getCuSeqlens())))
    return failure();
  return verifyQueryAndOutput(c, getQ(), getOut(), getLse(), kv->kvHeads,
                              kv->kHeadDim, kv->vHeadDim, "k");
}

LogicalResult DecodeAttentionOp::verify() {
  Checker c(*this);
  auto cache = verifyCaches(c, getKCache(), getVCache(), getLayout());
  if (failed(cache) || failed(c.floatData(getQ(), "q")) ||
      failed(c.sameElem(getKCache(), "k_cache", getQ(), "q")) ||
      failed(verifyPaging(c, getBlockTable(), getSeqLens(), "seq_lens")) ||
      failed(verifyQueryAndOutput(c, getQ(), getOut(), getLse(),
                                  cache->kvHeads, cache->kHeadDim,
                                  cache->vHeadDim, "k_cache")))
    return failure();
  return c.sameDim(getQ(), "q", 0, getSeqLens(), "seq_lens", 0, "requests");
}

LogicalResult ExtendAttentionOp::verify() {
  Checker c(*this);
  auto kv = verifyNewKV(c, getQ(), "q", getK(), getV());
  auto cache = verifyCaches(c, getKCache(), getVCache(), getLayout());
  if (failed(kv) || failed(cache) ||
      failed(c.sameElem(getKCache(), "k_cache", getQ(), "q")) ||
      failed(verifyPaging(c, getBlockTable(), getContextLens(),
                          "context_lens")) ||
      failed(verifyCuSeqlens(c, getCuSeqlens(), getContextLens(),
                             "context_lens")))
    return failure();
  if (kv->kvHeads != cache->kvHeads || kv->kHeadDim != cache->kHeadDim ||
      kv->vHeadDim != cache->vHeadDim)
    return emitOpError() << "new 'k'/'v' (" << kv->kvHeads << " heads, dims "
                         << kv->kHeadDim << "/" << kv->vHeadDim
                         << ") must match the caches (" << cache->kvHeads
                         << " heads, dims " << cache->kHeadDim << "/"
                         << cache->vHeadDim << ")";
  return verifyQueryAndOutput(c, getQ(), getOut(), getLse(), kv->kvHeads,
                              kv->kHeadDim, kv->vHeadDim, "k");
}

LogicalResult PagedAttentionOp::verify() {
  Checker c(*this);
  bool split = isSplit();
  if (split && getWindowStart())
    return emitOpError() << "the split form ('out' [P, T, Hq, Dv]) takes no "
                            "window: partial p covers ceil(MB / P) blocks";
  if (split && !getLse())
    return emitOpError() << "the split form ('out' [P, T, Hq, Dv]) needs "
                            "'lse' [P, Hq, T]: its partials are merged by it";
  if (getCausal() && !getCuSeqlens())
    return emitOpError() << "'causal' needs 'cu_seqlens': it places each "
                            "request's queries at the end of its sequence";
  if (getCausal() && getWindowStart())
    return emitOpError() << "'causal' takes no window (the split form cuts "
                            "the sequence into windows)";
  auto cache = verifyCaches(c, getKCache(), getVCache(), getLayout());
  if (failed(cache) || failed(c.floatData(getQ(), "q")) ||
      failed(c.sameElem(getKCache(), "k_cache", getQ(), "q")) ||
      failed(verifyPaging(c, getBlockTable(), getContextLens(),
                          "context_lens")) ||
      failed(verifyWindow(*this, getWindowStart(), getWindowLen())) ||
      failed(verifyQueryAndOutput(c, getQ(), getOut(), getLse(),
                                  cache->kvHeads, cache->kHeadDim,
                                  cache->vHeadDim, "k_cache", split)))
    return failure();
  if (getCuSeqlens())
    return verifyCuSeqlens(c, getCuSeqlens(), getContextLens(), "context_lens");
  return c.sameDim(getQ(), "q", 0, getContextLens(), "context_lens", 0,
                   "requests");
}

LogicalResult ReshapeAndCacheOp::verify() {
  Checker c(*this);
  auto kv = verifyNewKV(c, getK(), "k", getK(), getV());
  auto cache = verifyCaches(c, getKCache(), getVCache(), getLayout());
  if (failed(kv) || failed(cache) ||
      failed(c.sameElem(getKCache(), "k_cache", getK(), "k")) ||
      failed(verifyIndexVector(c, getSlotMapping(), "slot_mapping")) ||
      failed(c.sameDim(getSlotMapping(), "slot_mapping", 0, getK(), "k", 0,
                       "tokens")))
    return failure();
  if (kv->kvHeads != cache->kvHeads || kv->kHeadDim != cache->kHeadDim ||
      kv->vHeadDim != cache->vHeadDim)
    return emitOpError() << "'k'/'v' (" << kv->kvHeads << " heads, dims "
                         << kv->kHeadDim << "/" << kv->vHeadDim
                         << ") must match the caches (" << cache->kvHeads
                         << " heads, dims " << cache->kHeadDim << "/"
                         << cache->vHeadDim << ")";
  return success();
}

LogicalResult MLADecodeOp::verify() {
  Checker c(*this);
  Value q = getQ(), cache = getKvCache(), out = getOut();
  // The split form has a leading partial dimension on out and lse.
  bool split = isSplit();
  unsigned s = split ? 1 : 0;
  if (split && getWindowStart())
    return emitOpError() << "the split form ('out' [P, B, H, L]) takes no "
                            "window: partial p covers ceil(MB / P) blocks";
  if (split && !getLse())
    return emitOpError() << "the split form ('out' [P, B, H, L]) needs 'lse' "
                            "[P, H, B]: its partials are merged by it";
  if (failed(c.rank(q, "q", 3)) || failed(c.floatData(q, "q")) ||
      failed(c.rank(cache, "kv_cache", 3)) ||
      failed(c.sameElem(cache, "kv_cache", q, "q")) ||
      failed(c.rank(out, "out", 3 + s)) ||
      failed(c.outElem(out, "out", q, "q")) ||
      failed(verifyPaging(c, getBlockTable(), getSeqLens(), "seq_lens")) ||
      failed(verifyWindow(*this, getWindowStart(), getWindowLen())))
    return failure();
  auto heads = c.staticDim(q, "q", 1, "num_heads");
  auto qDim = c.staticDim(q, "q", 2, "latent + rope dim");
  auto bs = c.staticDim(cache, "kv_cache", 1, "block_size");
  auto latent = c.staticDim(out, "out", 2 + s, "latent dim");
  if (failed(heads) || failed(qDim) || failed(bs) || failed(latent) ||
      failed(c.blockSize(*bs)))
    return failure();
  if (*qDim % 16 != 0 || *qDim < 16 || *qDim > 1024)
    return emitOpError() << "MLA head dim of 'q' is " << *qDim
                         << "; it must be a multiple of 16 from 16 to 1024";
  if (*latent % 16 != 0 || *latent <= 0 || *latent >= *qDim)
    return emitOpError() << "latent dim of 'out' (" << *latent
                         << ") must be a positive multiple of 16 smaller than "
                            "the head dim of 'q' ("
                         << *qDim << ")";
  if (failed(c.dimIs(cache, "kv_cache", 2, *qDim, "latent + rope dim")) ||
      failed(c.sameDim(out, "out", s, q, "q", 0, "requests")) ||
      failed(c.staticDimIs(out, "out", 1 + s, *heads, "num_heads")) ||
      failed(c.sameDim(q, "q", 0, getSeqLens(), "seq_lens", 0, "requests")))
    return failure();
  if (Value lse = getLse())
    return failure(
        failed(c.rank(lse, "lse", 2 + s)) || failed(c.f32Elem(lse, "lse")) ||
        failed(c.staticDimIs(lse, "lse", s, *heads, "num_heads")) ||
        failed(c.sameDim(lse, "lse", 1 + s, q, "q", 0, "requests")) ||
        (split &&
         failed(c.sameDim(lse, "lse", 0, out, "out", 0, "partials"))));
  return success();
}

//===----------------------------------------------------------------------===//
// LSE merge
//===----------------------------------------------------------------------===//

/// o `[T, H, D]` with its lse `[H, T]`, checked against a reference o.
static LogicalResult verifyPartial(Checker &c, Value o, StringRef oName,
                                   Value lse, StringRef lseName, Value ref,
                                   StringRef refName) {
  if (failed(c.rank(o, oName, 3)) || failed(c.floatData(o, oName)) ||
      failed(c.staticDim(o, oName, 1, "heads")) ||
      failed(c.staticDim(o, oName, 2, "head_dim")))
    return failure();
  if (o != ref && (failed(c.sameDim(o, oName, 0, ref, refName, 0, "tokens")) ||
                   failed(c.sameDim(o, oName, 1, ref, refName, 1, "heads")) ||
                   failed(c.sameDim(o, oName, 2, ref, refName, 2, "head_dim"))))
    return failure();
  if (!lse)
    return success();
  return failure(failed(c.rank(lse, lseName, 2)) ||
                 failed(c.f32Elem(lse, lseName)) ||
                 failed(c.staticDim(lse, lseName, 0, "heads")) ||
                 failed(c.sameDim(lse, lseName, 0, o, oName, 1, "heads")) ||
                 failed(c.sameDim(lse, lseName, 1, o, oName, 0, "tokens")));
}

LogicalResult LseMergeOp::verify() {
  Checker c(*this);
  return failure(
      failed(verifyPartial(c, getOA(), "o_a", getLseA(), "lse_a", getOA(),
                           "o_a")) ||
      failed(verifyPartial(c, getOB(), "o_b", getLseB(), "lse_b", getOA(),
                           "o_a")) ||
      failed(verifyPartial(c, getOut(), "out", getLseOut(), "lse_out", getOA(),
                           "o_a")));
}

LogicalResult LseMergeNOp::verify() {
  Checker c(*this);
  Value p = getPartials(), pl = getPartialLse(), out = getOut();
  if (failed(c.rank(p, "partials", 4)) || failed(c.floatData(p, "partials")) ||
      failed(c.staticDim(p, "partials", 2, "heads")) ||
      failed(c.staticDim(p, "partials", 3, "head_dim")) ||
      failed(c.rank(pl, "partial_lse", 3)) ||
      failed(c.f32Elem(pl, "partial_lse")) ||
      failed(c.staticDim(pl, "partial_lse", 1, "heads")) ||
      failed(c.sameDim(pl, "partial_lse", 0, p, "partials", 0, "partials")) ||
      failed(c.sameDim(pl, "partial_lse", 1, p, "partials", 2, "heads")) ||
      failed(c.sameDim(pl, "partial_lse", 2, p, "partials", 1, "tokens")) ||
      failed(verifyPartial(c, out, "out", getLseOut(), "lse_out", out, "out")))
    return failure();
  return failure(
      failed(c.sameDim(out, "out", 0, p, "partials", 1, "tokens")) ||
      failed(c.sameDim(out, "out", 1, p, "partials", 2, "heads")) ||
      failed(c.sameDim(out, "out", 2, p, "partials", 3, "head_dim")));
}

//===----------------------------------------------------------------------===//
// Grouped matmul
//===----------------------------------------------------------------------===//

bool GroupedMatmulOp::isPointerTable() {
  return Checker::type(getB()).getRank() == 1;
}

int64_t GroupedMatmulOp::getN() {
  if (isPointerTable())
    return (*getBShape())[getTransB() ? 0 : 1];
  return Checker::type(getB()).getDimSize(getTransB() ? 1 : 2);
}

int64_t GroupedMatmulOp::getK() {
  return Checker::type(getA()).getDimSize(1);
}

/// group_offsets `[G]` i32.
static LogicalResult verifyGroupOffsets(Checker &c, Value g) {
  return verifyIndexVector(c, g, "group_offsets");
}

LogicalResult GroupedMatmulOp::verify() {
  Checker c(*this);
  Value a = getA(), b = getB(), out = getC();
  if (failed(c.rank(a, "a", 2)) || failed(c.floatData(a, "a")) ||
      failed(c.rank(out, "c", 2)) || failed(c.outElem(out, "c", a, "a")) ||
      failed(verifyGroupOffsets(c, getGroupOffsets())))
    return failure();
  // Gathered rows: c has a_rows' rows, a any number.
  if (Value rows = getARows()) {
    if (failed(verifyIndexVector(c, rows, "a_rows")) ||
        failed(c.sameDim(out, "c", 0, rows, "a_rows", 0, "rows")))
      return failure();
    if (getRowsDivisorOrOne() < 1)
      return emitOpError() << "a_rows_divisor must be positive, got "
                           << getRowsDivisorOrOne();
  } else if (getARowsDivisor()) {
    return emitOpError("a_rows_divisor is only allowed with 'a_rows'");
  } else if (failed(c.sameDim(out, "c", 0, a, "a", 0, "rows"))) {
    return failure();
  }
  auto k = c.staticDim(a, "a", 1, "K");
  if (failed(k))
    return failure();
  int64_t n;
  if (isPointerTable()) {
    if (!Checker::elem(b).isSignlessInteger(64))
      return emitOpError() << "a rank-1 'b' is a pointer table and must be a "
                              "memref of i64, got "
                           << Checker::elem(b);
    if (!getBShape() || getBShape()->size() != 2)
      return emitOpError("a pointer-table 'b' needs b_shape = [N, K] (trans_b) "
                         "or [K, N]");
    ArrayRef<int64_t> shape = *getBShape();
    if (shape[0] <= 0 || shape[1] <= 0)
      return emitOpError() << "b_shape must be positive, got [" << shape[0]
                           << ", " << shape[1] << "]";
    if (shape[getTransB() ? 1 : 0] != *k)
      return emitOpError() << "b_shape K (" << shape[getTransB() ? 1 : 0]
                           << ") must match 'a' dim 1 (" << *k << ")";
    n = getN();
    if (failed(c.sameDim(b, "b", 0, getGroupOffsets(), "group_offsets", 0,
                         "groups")))
      return failure();
  } else {
    if (getBShape())
      return emitOpError("b_shape is only allowed when 'b' is a pointer table");
    if (failed(c.rank(b, "b", 3)) || failed(c.sameElem(b, "b", a, "a")) ||
        failed(c.sameDim(b, "b", 0, getGroupOffsets(), "group_offsets", 0,
                         "groups")) ||
        failed(c.staticDimIs(b, "b", getTransB() ? 2 : 1, *k, "K")))
      return failure();
    auto bn = c.staticDim(b, "b", getTransB() ? 1 : 2, "N");
    if (failed(bn))
      return failure();
    n = *bn;
  }
  if (failed(c.staticDimIs(out, "c", 1, n, "N")))
    return failure();
  Value act = getAct();
  if (!act)
    return success();
  // The fused SwiGLU: each group's b rows are gate rows, then up rows.
  if (isPointerTable() || !getTransB())
    return emitOpError("'act' needs a stacked 'b' with trans_b (each group's "
                       "gate rows, then its up rows)");
  if (n % 2)
    return emitOpError() << "'act' needs an even N (gate and up halves), got "
                         << n;
  return failure(failed(c.rank(act, "act", 2)) ||
                 failed(c.sameElem(act, "act", out, "c")) ||
                 failed(c.sameDim(act, "act", 0, out, "c", 0, "rows")) ||
                 failed(c.staticDimIs(act, "act", 1, n / 2, "N / 2")));
}

LogicalResult GroupedMatmulWgradOp::verify() {
  Checker c(*this);
  Value a = getA(), b = getB(), out = getC();
  // The product's rows: a's and b's, or their a_rows' and b_rows'.
  Value aRows = getARows(), bRows = getBRows();
  if ((aRows && failed(verifyIndexVector(c, aRows, "a_rows"))) ||
      (bRows && failed(verifyIndexVector(c, bRows, "b_rows"))))
    return failure();
  if (!aRows && !bRows && getRowsDivisor())
    return emitOpError("rows_divisor is only allowed with 'a_rows' or "
                       "'b_rows'");
  if (getRowsDivisorOrOne() < 1)
    return emitOpError() << "rows_divisor must be positive, got "
                         << getRowsDivisorOrOne();
  return failure(
      failed(c.rank(a, "a", 2)) || failed(c.floatData(a, "a")) ||
      failed(c.rank(b, "b", 2)) || failed(c.sameElem(b, "b", a, "a")) ||
      failed(c.staticDim(a, "a", 1, "M")) ||
      failed(c.staticDim(b, "b", 1, "N")) || failed(c.rank(out, "c", 3)) ||
      failed(c.outElem(out, "c", a, "a")) ||
      failed(verifyGroupOffsets(c, getGroupOffsets())) ||
      failed(c.sameDim(bRows ? bRows : b, bRows ? "b_rows" : "b", 0,
                       aRows ? aRows : a, aRows ? "a_rows" : "a", 0, "rows")) ||
      failed(c.sameDim(out, "c", 0, getGroupOffsets(), "group_offsets", 0,
                       "groups")) ||
      failed(c.staticDimIs(out, "c", 1, Checker::type(a).getDimSize(1), "M")) ||
      failed(c.staticDimIs(out, "c", 2, Checker::type(b).getDimSize(1), "N")));
}

//===----------------------------------------------------------------------===//
// MoE glue
//===----------------------------------------------------------------------===//

/// topk_ids `[T, k]` i32 with a static k.
static LogicalResult verifyTopkIds(Checker &c, Value ids) {
  if (failed(c.rank(ids, "topk_ids", 2)) ||
      failed(c.intElem(ids, "topk_ids", 32)))
    return failure();
  FailureOr<int64_t> k = c.staticDim(ids, "topk_ids", 1, "topk");
  if (failed(k))
    return failure();
  if (*k < 1)
    return c.op->emitOpError() << "'topk_ids' dim 1 (topk) must be positive, "
                                  "got "
                               << *k;
  return success();
}

LogicalResult ExpertHistogramOp::verify() {
  Checker c(*this);
  return failure(failed(verifyTopkIds(c, getTopkIds())) ||
                 failed(verifyIndexVector(c, getCounts(), "counts")) ||
                 failed(verifyGroupOffsets(c, getGroupOffsets())) ||
                 failed(c.sameDim(getGroupOffsets(), "group_offsets", 0,
                                  getCounts(), "counts", 0, "experts")));
}

LogicalResult ExpertSortOp::verify() {
  Checker c(*this);
  Value ids = getTopkIds(), sorted = getSortedRows(), pos = getRowPositions();
  if (failed(verifyTopkIds(c, ids)) ||
      failed(verifyGroupOffsets(c, getGroupOffsets())) ||
      failed(verifyIndexVector(c, sorted, "sorted_rows")) ||
      failed(c.rank(pos, "row_positions", 2)) ||
      failed(c.intElem(pos, "row_positions", 32)) ||
      failed(c.sameDim(pos, "row_positions", 0, ids, "topk_ids", 0, "tokens")) ||
      failed(c.sameDim(pos, "row_positions", 1, ids, "topk_ids", 1, "topk")))
    return failure();
  int64_t t = Checker::type(ids).getDimSize(0);
  int64_t k = Checker::type(ids).getDimSize(1);
  if (!ShapedType::isDynamic(t))
    return c.dimIs(sorted, "sorted_rows", 0, t * k, "tokens * topk");
  return success();
}

LogicalResult MoePermuteOp::verify() {
  Checker c(*this);
  if (getTopk() <= 0)
    return emitOpError() << "topk must be positive, got " << getTopk();
  Value x = getX(), out = getOut();
  return failure(
      failed(c.rank(x, "x", 2)) || failed(c.floatData(x, "x")) ||
      failed(c.staticDim(x, "x", 1, "hidden")) ||
      failed(verifyIndexVector(c, getSortedRows(), "sorted_rows")) ||
      failed(c.rank(out, "out", 2)) || failed(c.sameElem(out, "out", x, "x")) ||
      failed(c.sameDim(out, "out", 0, getSortedRows(), "sorted_rows", 0,
                       "rows")) ||
      failed(c.staticDimIs(out, "out", 1, Checker::type(x).getDimSize(1),
                           "hidden")));
}

LogicalResult MoeUnpermuteOp::verify() {
  Checker c(*this);
  Value y = getY(), pos = getRowPositions(), w = getWeights(), out = getOut();
  if (failed(c.rank(y, "y", 2)) || failed(c.floatData(y, "y")) ||
      failed(c.staticDim(y, "y", 1, "hidden")) ||
      failed(c.rank(pos, "row_positions", 2)) ||
      failed(c.intElem(pos, "row_positions", 32)) ||
      failed(c.staticDim(pos, "row_positions", 1, "topk")) ||
      failed(c.rank(w, "weights", 2)) ||
      failed(c.outElem(w, "weights", y, "y")) ||
      failed(c.sameDim(w, "weights", 0, pos, "row_positions", 0, "tokens")) ||
      failed(c.sameDim(w, "weights", 1, pos, "row_positions", 1, "topk")) ||
      failed(c.rank(out, "out", 2)) || failed(c.sameElem(out, "out", y, "y")) ||
      failed(c.sameDim(out, "out", 0, pos, "row_positions", 0, "tokens")) ||
      failed(c.staticDimIs(out, "out", 1, Checker::type(y).getDimSize(1),
                           "hidden")))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// SwiGLU and its backward
//===----------------------------------------------------------------------===//

namespace {

/// The gate and up rows `h`: `[R, 2I]` (the two column halves) or `[2, R,
/// I]`, float data with I static. Returns I.
FailureOr<int64_t> verifyGateUp(Checker &c, Operation *op, Value h,
                                StringRef name) {
  MemRefType type = Checker::type(h);
  if (failed(c.floatData(h, name)))
    return failure();
  if (type.getRank() == 2) {
    FailureOr<int64_t> width = c.staticDim(h, name, 1, "2 x intermediate");
    if (failed(width))
      return failure();
    if (*width % 2 || *width == 0) {
      op->emitOpError() << "'" << name << "' [R, 2I] must have an even, "
                        << "nonzero column count (gate then up), got "
                        << *width;
      return failure();
    }
    return *width / 2;
  }
  if (type.getRank() != 3) {
    op->emitOpError() << "'" << name << "' must be [R, 2I] (gate | up) or "
                      << "[2, R, I] (gate, up), got rank " << type.getRank();
    return failure();
  }
  if (failed(c.staticDimIs(h, name, 0, 2, "gate and up")))
    return failure();
  FailureOr<int64_t> width = c.staticDim(h, name, 2, "intermediate");
  if (succeeded(width) && *width == 0) {
    op->emitOpError() << "'" << name << "' has an intermediate size of 0";
    return failure();
  }
  return width;
}

/// The row dim of `h` in either layout.
unsigned gateUpRowDim(Value h) { return Checker::type(h).getRank() == 2 ? 0 : 1; }

/// `v` is `[R, I]` rows of `h`'s element type.
LogicalResult verifyRowsLike(Checker &c, Value v, StringRef name, Value h,
                             int64_t intermediate) {
  return failure(
      failed(c.rank(v, name, 2)) || failed(c.sameElem(v, name, h, "h")) ||
      failed(c.sameDim(v, name, 0, h, "h", gateUpRowDim(h), "rows")) ||
      failed(c.staticDimIs(v, name, 1, intermediate, "intermediate")));
}

} // namespace

LogicalResult SwigluOp::verify() {
  Checker c(*this);
  FailureOr<int64_t> intermediate = verifyGateUp(c, *this, getH(), "h");
  if (failed(intermediate))
    return failure();
  return verifyRowsLike(c, getAct(), "act", getH(), *intermediate);
}

LogicalResult SwigluBackwardOp::verify() {
  Checker c(*this);
  Value h = getH(), w = getTopkWeights(), pos = getRowPositions();
  Value dw = getDTopkWeights();
  FailureOr<int64_t> intermediate = verifyGateUp(c, *this, h, "h");
  if (failed(intermediate) ||
      failed(verifyRowsLike(c, getGrad(), "grad", h, *intermediate)) ||
      failed(verifyRowsLike(c, getActWeighted(), "act_weighted", h,
                            *intermediate)))
    return failure();
  if (Checker::type(getDh()).getShape() != Checker::type(h).getShape() ||
      Checker::elem(getDh()) != Checker::elem(h))
    return emitOpError() << "'dh' must have the type of 'h' (" << h.getType()
                         << "), got " << getDh().getType();
  if (failed(verifyIndexVector(c, getSortedRows(), "sorted_rows")) ||
      failed(c.sameDim(getSortedRows(), "sorted_rows", 0, h, "h",
                       gateUpRowDim(h), "rows")) ||
      failed(c.rank(pos, "row_positions", 2)) ||
      failed(c.intElem(pos, "row_positions", 32)))
    return failure();
  FailureOr<int64_t> topk = c.staticDim(pos, "row_positions", 1, "topk");
  if (failed(topk))
    return failure();
  // Each (token, slot) is one row.
  int64_t tokens = Checker::type(pos).getDimSize(0);
  if (!ShapedType::isDynamic(tokens) &&
      failed(c.dimIs(getSortedRows(), "sorted_rows", 0, tokens * *topk,
                     "tokens x topk")))
    return failure();
  return failure(
      failed(c.rank(w, "topk_weights", 2)) ||
      failed(c.outElem(w, "topk_weights", h, "h")) ||
      failed(c.sameDim(w, "topk_weights", 0, pos, "row_positions", 0,
                       "tokens")) ||
      failed(c.sameDim(w, "topk_weights", 1, pos, "row_positions", 1,
                       "topk")) ||
      failed(c.rank(dw, "d_topk_weights", 2)) ||
      failed(c.f32Elem(dw, "d_topk_weights")) ||
      failed(c.sameDim(dw, "d_topk_weights", 0, pos, "row_positions", 0,
                       "tokens")) ||
      failed(c.sameDim(dw, "d_topk_weights", 1, pos, "row_positions", 1,
                       "topk")));
}

#define GET_OP_CLASSES
#include "tessel/Dialect/Tessel/IR/TesselOps.cpp.inc"
