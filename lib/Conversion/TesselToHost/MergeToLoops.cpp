//===- MergeToLoops.cpp - LSE merges as reference loops -------------------===//
//
// tessel.lse_merge and tessel.lse_merge_n, per (token, head): the weights of
// the partials come from their LSEs, then one loop over the head dim combines
// the partial outputs. The infinity rules of the op descriptions are spelled
// out here: an LSE of +inf is an empty partial like -inf, and when every
// partial is empty the exponents are shifted by 0 instead of by -inf, so
// that all weights are exp(-inf) = 0 (not exp(NaN)), the merged LSE is
// 0 + log(0) = -inf, and the output takes its documented value instead of
// 0 / 0.
//
//===----------------------------------------------------------------------===//

#include "LoopUtils.h"

#include <limits>

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::host;

/// Loads an LSE, mapping +inf (an empty partial) to -inf.
static Value loadLse(LoopBuilder &lb, Value lse, ValueRange indices) {
  Value v = lb.loadF32(lse, indices);
  Value posInf = lb.fcmp(arith::CmpFPredicate::OEQ, v,
                         lb.f32(std::numeric_limits<double>::infinity()));
  return lb.select(posInf, lb.negInf(), v);
}

namespace {
/// The exponent shift of a merge: the max LSE, or 0 when all partials are
/// empty (the max is -inf).
struct Shift {
  Value allEmpty;
  Value value;
};
} // namespace

static Shift shiftFor(LoopBuilder &lb, Value maxLse) {
  Value allEmpty = lb.fcmp(arith::CmpFPredicate::OEQ, maxLse, lb.negInf());
  return {allEmpty, lb.select(allEmpty, lb.f32(0), maxLse)};
}

/// x * w, or 0 when the weight is 0: an empty partial contributes nothing
/// even if its output holds NaN or Inf (GPU split-KV kernels may skip
/// writing empty windows).
static Value weighted(LoopBuilder &lb, Value x, Value w) {
  Value empty = lb.fcmp(arith::CmpFPredicate::OEQ, w, lb.f32(0));
  Value product = lb.fmul(x, w);
  return lb.select(empty, lb.f32(0), product);
}

LogicalResult host::lowerLseMerge(LseMergeOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value oA = op.getOA(), oB = op.getOB(), out = op.getOut();
  Value lseA = op.getLseA(), lseB = op.getLseB(), lseOut = op.getLseOut();
  Value zero = lb.idx(0);
  // Heads and head dims are static and agree (verifier); token counts may be
  // dynamic, so the loop stays inside all of them.
  Value numTokens = lb.minDim(
      {{oA, 0}, {oB, 0}, {out, 0}, {lseA, 1}, {lseB, 1}, {lseOut, 1}});
  // `out`/`lse_out` may alias `o_a`/`lse_a`: every element is read before the
  // same element is written, and nothing is read after it is written.
  lb.forLoop(zero, numTokens, [&](Value t) {
    lb.forLoop(zero, lb.dim(oA, 1), [&](Value h) {
      Value a = loadLse(lb, lseA, {h, t});
      Value bLse = loadLse(lb, lseB, {h, t});
      Shift m = shiftFor(lb, lb.fmax(a, bLse));
      Value wA = lb.exp(lb.fsub(a, m.value));
      Value wB = lb.exp(lb.fsub(bLse, m.value));
      Value sum = lb.fadd(wA, wB);
      lb.forLoop(zero, lb.dim(oA, 2), [&](Value d) {
        Value xA = lb.loadF32(oA, {t, h, d});
        Value xB = lb.loadF32(oB, {t, h, d});
        Value termA = weighted(lb, xA, wA);
        Value termB = weighted(lb, xB, wB);
        Value merged = lb.fdiv(lb.fadd(termA, termB), sum);
        lb.storeF32(lb.select(m.allEmpty, xA, merged), out, {t, h, d});
      });
      if (lseOut)
        lb.storeF32(lb.fadd(m.value, lb.log(sum)), lseOut, {h, t});
    });
  });
  return success();
}

LogicalResult host::lowerLseMergeN(LseMergeNOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value parts = op.getPartials(), partLse = op.getPartialLse();
  Value out = op.getOut(), lseOut = op.getLseOut();
  Value zero = lb.idx(0);
  Value numParts = lb.minDim({{parts, 0}, {partLse, 0}});
  Value numTokens =
      lb.minDim({{parts, 1}, {partLse, 2}, {out, 0}, {lseOut, 1}});
  Value headDim = lb.dim(parts, 3);
  // The weighted sum of one (token, head) row, in f32 whatever `out` is, so
  // that the loop over partials stays outside the contiguous loop over d.
  // (The head dim is static: verifier.)
  auto partsType = cast<MemRefType>(parts.getType());
  Value acc =
      lb.alloc(MemRefType::get({partsType.getDimSize(3)}, b.getF32Type()), {});
  lb.forLoop(zero, numTokens, [&](Value t) {
    lb.forLoop(zero, lb.dim(parts, 2), [&](Value h) {
      Value maxLse = lb.forLoop(
          zero, numParts, lb.negInf(),
          [&](Value p, ValueRange m) -> SmallVector<Value> {
            return {lb.fmax(m.front(), loadLse(lb, partLse, {p, h, t}))};
          })[0];
      Shift m = shiftFor(lb, maxLse);
      lb.fill(acc, lb.f32(0));
      Value sum = lb.forLoop(
          zero, numParts, lb.f32(0),
          [&](Value p, ValueRange s) -> SmallVector<Value> {
            Value lse = loadLse(lb, partLse, {p, h, t});
            Value w = lb.exp(lb.fsub(lse, m.value));
            // An empty partial (weight 0) is skipped, not multiplied by 0:
            // its output may be anything, NaN included.
            Value nonEmpty = lb.fcmp(arith::CmpFPredicate::OGT, w, lb.f32(0));
            lb.ifThen(nonEmpty, [&] {
              lb.forLoop(zero, headDim, [&](Value d) {
                Value x = lb.loadF32(parts, {p, t, h, d});
                Value term = lb.fmul(w, x);
                lb.storeF32(lb.fadd(lb.loadF32(acc, d), term), acc, d);
              });
            });
            return {lb.fadd(s.front(), w)};
          })[0];
      lb.forLoop(zero, headDim, [&](Value d) {
        Value merged = lb.fdiv(lb.loadF32(acc, d), sum);
        lb.storeF32(lb.select(m.allEmpty, lb.f32(0), merged), out, {t, h, d});
      });
      if (lseOut)
        lb.storeF32(lb.fadd(m.value, lb.log(sum)), lseOut, {h, t});
    });
  });
  lb.dealloc(acc);
  return success();
}
