//===- SwigluToLoops.cpp - SwiGLU and its backward as reference loops -----===//
//
// tessel.swiglu and tessel.swiglu_backward, the elementwise steps of an MoE
// expert between its two grouped matmuls. The sequential reference: every
// value in f32, the routing-weight gradient of a row summed n = 0..I-1, a
// sorted_rows entry bounds-checked before it indexes the weights.
//
//===----------------------------------------------------------------------===//

#include "LoopUtils.h"

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::host;

namespace {

/// Where row p's gate and up element n live in h (or dh): the two column
/// halves of [R, 2I], or h[0] and h[1] of [2, R, I].
struct GateUp {
  GateUp(LoopBuilder &lb, Value h)
      : lb(lb), h(h), fused(cast<MemRefType>(h.getType()).getRank() == 2) {
    auto type = cast<MemRefType>(h.getType());
    intermediate = fused ? type.getDimSize(1) / 2 : type.getDimSize(2);
  }
  SmallVector<Value> gate(Value p, Value n) {
    if (fused)
      return {p, n};
    return {lb.idx(0), p, n};
  }
  SmallVector<Value> up(Value p, Value n) {
    if (fused)
      return {p, lb.add(n, lb.idx(intermediate))};
    return {lb.idx(1), p, n};
  }
  Value rows() { return lb.dim(h, fused ? 0 : 1); }

  LoopBuilder &lb;
  Value h;
  bool fused;
  int64_t intermediate;
};

/// sigmoid(x) = 1 / (1 + e^-x).
Value sigmoid(LoopBuilder &lb, Value x) {
  Value one = lb.f32(1);
  return lb.fdiv(one, lb.fadd(one, lb.exp(lb.fsub(lb.f32(0), x))));
}

} // namespace

void host::swigluLoops(OpBuilder &b, Location loc, Value hMemref, Value act) {
  LoopBuilder lb(b, loc);
  GateUp h(lb, hMemref);
  Value zero = lb.idx(0);
  Value rows = lb.min(h.rows(), lb.dim(act, 0));
  lb.forLoop(zero, rows, [&](Value p) {
    lb.forLoop(zero, lb.idx(h.intermediate), [&](Value n) {
      Value gate = lb.loadF32(h.h, h.gate(p, n));
      Value up = lb.loadF32(h.h, h.up(p, n));
      lb.storeF32(lb.fmul(lb.fmul(gate, sigmoid(lb, gate)), up), act, {p, n});
    });
  });
}

LogicalResult host::lowerSwiglu(SwigluOp op, OpBuilder &b) {
  swigluLoops(b, op.getLoc(), op.getH(), op.getAct());
  return success();
}

LogicalResult host::lowerSwigluBackward(SwigluBackwardOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  GateUp h(lb, op.getH()), dh(lb, op.getDh());
  Value grad = op.getGrad(), weights = op.getTopkWeights();
  Value sorted = op.getSortedRows(), positions = op.getRowPositions();
  Value actWeighted = op.getActWeighted(), dWeights = op.getDTopkWeights();
  Value zero = lb.idx(0), one = lb.f32(1);
  Value intermediate = lb.idx(h.intermediate);
  Value rows = lb.min(lb.minDim({{grad, 0}, {sorted, 0}, {actWeighted, 0}}),
                      lb.min(h.rows(), dh.rows()));
  Value tokens = lb.minDim({{weights, 0}, {positions, 0}, {dWeights, 0}});
  Value topk = lb.minDim({{weights, 1}, {positions, 1}, {dWeights, 1}});

  // Dropped slots (no position) get a zero gradient.
  lb.forLoop(zero, tokens, [&](Value t) {
    lb.forLoop(zero, topk, [&](Value j) {
      Value p = lb.loadIndex(positions, {t, j});
      lb.ifThenElse(lb.inBounds(p, rows), [] {},
                    [&] { lb.storeF32(lb.f32(0), dWeights, {t, j}); });
    });
  });

  lb.forLoop(zero, rows, [&](Value p) {
    Value r = lb.loadIndex(sorted, p);
    lb.ifThenElse(
        lb.inBounds(r, lb.mul(tokens, topk)),
        [&] {
          Value t = lb.div(r, topk), j = lb.rem(r, topk);
          Value w = lb.loadF32(weights, {t, j});
          SmallVector<Value> dot = lb.forLoop(
              zero, intermediate, {lb.f32(0)},
              [&](Value n, ValueRange acc) -> SmallVector<Value> {
                Value g = lb.loadF32(grad, {p, n});
                Value gate = lb.loadF32(h.h, h.gate(p, n));
                Value up = lb.loadF32(h.h, h.up(p, n));
                Value s = sigmoid(lb, gate);
                Value silu = lb.fmul(gate, s);
                Value act = lb.fmul(silu, up);
                Value gw = lb.fmul(g, w);
                // silu'(x) = s (1 + x (1 - s)).
                Value dSilu = lb.fmul(s, lb.fadd(one, lb.fmul(gate,
                                                              lb.fsub(one, s))));
                lb.storeF32(lb.fmul(lb.fmul(gw, up), dSilu), dh.h,
                            dh.gate(p, n));
                lb.storeF32(lb.fmul(gw, silu), dh.h, dh.up(p, n));
                lb.storeF32(lb.fmul(act, w), actWeighted, {p, n});
                return {lb.fadd(acc[0], lb.fmul(g, act))};
              });
          lb.storeF32(dot[0], dWeights, {t, j});
        },
        [&] {
          // The unplaced tail: zero rows.
          lb.forLoop(zero, intermediate, [&](Value n) {
            lb.storeF32(lb.f32(0), dh.h, dh.gate(p, n));
            lb.storeF32(lb.f32(0), dh.h, dh.up(p, n));
            lb.storeF32(lb.f32(0), actWeighted, {p, n});
          });
        });
  });
  return success();
}
