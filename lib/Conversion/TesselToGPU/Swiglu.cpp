//===- Swiglu.cpp - SwiGLU and its backward kernel templates --------------===//
//
// tessel.swiglu and tessel.swiglu_backward: the elementwise work of an MoE
// expert between its grouped matmuls, one pass over the rows instead of
// the dozen tensor ops (each a full read and write of [R, I]) a framework
// spells them with. docs/dialect.md defines them; SwigluToLoops.cpp (host)
// is the oracle. Memory-bound: every element is read once and written
// once, in 16-byte chunks.
//
// swiglu: one lane per 16-byte chunk of act (256 lanes a block, grid over
// the R rows): the lane loads its gate and up chunks, computes silu(gate) *
// up in f32 and stores one chunk.
//
// swiglu_backward: one warp per sorted row p (256 threads a block). The
// row's sorted_rows[p] names its routing weight (zero for the unplaced
// tail, whose outputs are stored as zeros whatever grad and h hold there);
// the warp walks the row's chunks (lane l takes chunks l, l + warp, ...),
// storing d gate, d up and w * act, and keeps its part of <grad, act> in
// f32; a shuffle tree sums the lanes' parts in a fixed order (bitwise
// reproducible, no atomics) and lane 0 stores it at the row's (token,
// slot). The same lane also zeroes d_topk_weights.flat[p] when
// row_positions.flat[p] is no row (a dropped slot): R = T * k (the
// runtime checks it), so every entry is written by one warp.
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

constexpr int32_t kThreads = 256;

class SwigluBuilder : public KernelBuilder {
public:
  SwigluBuilder(OpBuilder &b, Location loc, const TargetInfo &target,
                Value h, int64_t chunk)
      : KernelBuilder(b, loc, target), h(h), chunk(chunk),
        fused(cast<MemRefType>(h.getType()).getRank() == 2) {
    auto type = cast<MemRefType>(h.getType());
    intermediate = fused ? type.getDimSize(1) / 2 : type.getDimSize(2);
  }

  void buildForward(Value act);
  void buildBackward(Value grad, Value weights, Value sorted,
                     Value positions, Value dh, Value actWeighted,
                     Value dWeights);

private:
  Value rows() { return memref::DimOp::create(b, loc, h, fused ? 0 : 1); }
  /// Indices of row p's gate or up chunk at column `col` in h or dh.
  SmallVector<Value> gateAt(Value p, Value col) {
    if (fused)
      return {p, col};
    return {idx(0), p, col};
  }
  SmallVector<Value> upAt(Value p, Value col) {
    if (fused)
      return {p, add(col, intermediate)};
    return {idx(1), p, col};
  }
  /// A chunk of `memref` at `indices` as f32 scalars.
  SmallVector<Value> loadF32(Value memref, ValueRange indices) {
    Value v = convertFloat(loadVector(memref, indices, chunk), b.getF32Type());
    SmallVector<Value> out;
    for (int64_t e = 0; e < chunk; ++e)
      out.push_back(vector::ExtractOp::create(b, loc, v, e));
    return out;
  }
  /// f32 scalars stored as one chunk of `memref`'s element type, or zeros
  /// where `keep` (if given) is false.
  void storeF32(ArrayRef<Value> values, Value memref, ValueRange indices,
                Value keep = nullptr) {
    auto f32s = VectorType::get({chunk}, b.getF32Type());
    Value v = vector::FromElementsOp::create(b, loc, f32s, values);
    if (keep)
      v = select(keep, v,
                 arith::ConstantOp::create(b, loc, f32s, b.getZeroAttr(f32s)));
    storeVector(convertFloat(v, cast<MemRefType>(memref.getType())
                                    .getElementType()),
                memref, indices);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }

  Value h;
  int64_t chunk;
  bool fused;
  int64_t intermediate;
};

void SwigluBuilder::buildForward(Value act) {
  int64_t chunks = intermediate / chunk;
  Value item = add(mul(blockId(gpu::Dimension::x), kThreads), threadId());
  Value p = divu(item, chunks);
  Value col = mul(remu(item, chunks), chunk);
  ifThen(lt(p, memref::DimOp::create(b, loc, act, 0)), [&] {
    SmallVector<Value> gate = loadF32(h, gateAt(p, col));
    SmallVector<Value> up = loadF32(h, upAt(p, col));
    SmallVector<Value> out;
    for (int64_t e = 0; e < chunk; ++e)
      out.push_back(swiglu(gate[e], up[e]));
    storeF32(out, act, {p, col});
  });
}

void SwigluBuilder::buildBackward(Value grad, Value weights, Value sorted,
                                  Value positions, Value dh,
                                  Value actWeighted, Value dWeights) {
  int64_t topk = cast<MemRefType>(positions.getType()).getDimSize(1);
  int64_t warpsPerBlock = kThreads / warpSize;
  Value lane = remu(threadId(), warpSize);
  Value p = add(mul(blockId(gpu::Dimension::x), warpsPerBlock),
                uniform(divu(threadId(), warpSize)));
  Value numRows = rows();
  ifThen(lt(p, numRows), [&] {
    Value slots = mul(memref::DimOp::create(b, loc, weights, 0), topk);
    // Sign-extended: a negative entry compares as huge.
    Value r = toIndex(memref::LoadOp::create(b, loc, sorted, p));
    Value valid = ult(r, slots);
    // R = T * k > 0 here, so entry 0 exists.
    Value slot = select(valid, r, idx(0));
    Value t = divu(slot, topk), j = remu(slot, topk);
    Value w = convertFloat(memref::LoadOp::create(b, loc, weights,
                                                  ValueRange{t, j}),
                           b.getF32Type());
    w = select(valid, w, f32(0));

    auto loop = scf::ForOp::create(b, loc, mul(lane, chunk), idx(intermediate),
                                   idx(warpSize * chunk), ValueRange{f32(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value col = loop.getInductionVar();
      Value dot = loop.getRegionIterArgs()[0];
      SmallVector<Value> g = loadF32(grad, {p, col});
      SmallVector<Value> gate = loadF32(h, gateAt(p, col));
      SmallVector<Value> up = loadF32(h, upAt(p, col));
      SmallVector<Value> dGate, dUp, actW;
      for (int64_t e = 0; e < chunk; ++e) {
        Value s = sigmoid(gate[e]);
        Value silu = fmul(gate[e], s);
        Value act = fmul(silu, up[e]);
        Value gw = fmul(g[e], w);
        // silu'(x) = s (1 + x (1 - s)).
        Value dSilu = fmul(s, fadd(f32(1), fmul(gate[e], fsub(f32(1), s))));
        dGate.push_back(fmul(fmul(gw, up[e]), dSilu));
        dUp.push_back(fmul(gw, silu));
        actW.push_back(fmul(act, w));
        dot = fadd(dot, fmul(g[e], act));
      }
      storeF32(dGate, dh, gateAt(p, col), valid);
      storeF32(dUp, dh, upAt(p, col), valid);
      storeF32(actW, actWeighted, {p, col}, valid);
      scf::YieldOp::create(b, loc, dot);
    }
    Value dot = warpReduce(loop.getResult(0), [&](Value x, Value y) {
      return fadd(x, y);
    });
    ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane,
                                 idx(0)),
           [&] {
             ifThen(valid, [&] {
               memref::StoreOp::create(b, loc, dot, dWeights, ValueRange{t, j});
             });
             // Entry p of the [T, k] slots: zero if its slot was dropped.
             Value tp = divu(p, topk), jp = remu(p, topk);
             Value position = toIndex(memref::LoadOp::create(
                 b, loc, positions, ValueRange{tp, jp}));
             Value dropped = arith::CmpIOp::create(
                 b, loc, arith::CmpIPredicate::uge, position, numRows);
             ifThen(dropped, [&] {
               memref::StoreOp::create(b, loc, f32(0), dWeights,
                                       ValueRange{tp, jp});
             });
           });
  });
}

} // namespace

FailureOr<LaunchGeometry>
mlir::tessel::buildSwiglu(OpBuilder &b, Operation *op, KernelContext &ctx) {
  auto forward = dyn_cast<SwigluOp>(op);
  auto backward = dyn_cast<SwigluBackwardOp>(op);
  Value h = forward ? forward.getH() : backward.getH();
  auto type = cast<MemRefType>(h.getType());
  int64_t intermediate =
      type.getRank() == 2 ? type.getDimSize(1) / 2 : type.getDimSize(2);
  if (failed(checkChunkRows(op, "intermediate size", intermediate,
                            type.getElementType())))
    return failure();
  int64_t chunk = 128 / type.getElementTypeBitWidth();
  SwigluBuilder builder(b, op->getLoc(), ctx.target, ctx.arg(h), chunk);
  KernelDim rows = ctx.dim(h, type.getRank() == 2 ? 0 : 1);
  LaunchGeometry geometry;
  geometry.block = {kThreads, 1, 1};
  if (forward) {
    builder.buildForward(ctx.arg(forward.getAct()));
    geometry.grid[0] = gridOver(rows, intermediate / chunk, kThreads);
    return geometry;
  }
  builder.buildBackward(ctx.arg(backward.getGrad()),
                        ctx.arg(backward.getTopkWeights()),
                        ctx.arg(backward.getSortedRows()),
                        ctx.arg(backward.getRowPositions()),
                        ctx.arg(backward.getDh()),
                        ctx.arg(backward.getActWeighted()),
                        ctx.arg(backward.getDTopkWeights()));
  geometry.grid[0] = gridOver(rows, 1, kThreads / ctx.target.getWarpSize());
  return geometry;
}
