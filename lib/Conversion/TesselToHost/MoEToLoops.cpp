//===- MoEToLoops.cpp - MoE routing glue as reference loops ---------------===//
//
// tessel.expert_histogram, tessel.expert_sort, tessel.moe_permute and
// tessel.moe_unpermute. These are the sequential reference: the histogram
// and the sort walk the (token, slot) rows in order, which makes the sort
// stable by construction. Ids, positions and rows read from device buffers
// are bounds-checked before they index anything; out-of-range ones are
// dropped exactly as the op descriptions say.
//
//===----------------------------------------------------------------------===//

#include "LoopUtils.h"

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::host;

/// Calls body(t, j, id) for every (token, slot) of topk_ids below
/// (numTokens, numSlots), in row order, with the id as an index.
static void forEachRow(LoopBuilder &lb, Value ids, Value numTokens,
                       Value numSlots,
                       function_ref<void(Value t, Value j, Value id)> body) {
  Value zero = lb.idx(0);
  lb.forLoop(zero, numTokens, [&](Value t) {
    lb.forLoop(zero, numSlots, [&](Value j) {
      body(t, j, lb.loadIndex(ids, {t, j}));
    });
  });
}

LogicalResult host::lowerExpertHistogram(ExpertHistogramOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value ids = op.getTopkIds(), counts = op.getCounts();
  Value offsets = op.getGroupOffsets();
  Value numExperts = lb.minDim({{counts, 0}, {offsets, 0}});
  lb.fill(counts, lb.idx(0));
  forEachRow(lb, ids, lb.dim(ids, 0), lb.dim(ids, 1),
             [&](Value, Value, Value id) {
               lb.ifThen(lb.inBounds(id, numExperts), [&] {
                 Value count = lb.add(lb.loadIndex(counts, id), lb.idx(1));
                 lb.storeIndex(count, counts, id);
               });
             });
  // Inclusive scan: group_offsets[e] is the end of expert e's rows.
  lb.forLoop(lb.idx(0), numExperts, lb.idx(0),
             [&](Value e, ValueRange sum) -> SmallVector<Value> {
               Value end = lb.add(sum.front(), lb.loadIndex(counts, e));
               lb.storeIndex(end, offsets, e);
               return {end};
             });
  return success();
}

LogicalResult host::lowerExpertSort(ExpertSortOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value ids = op.getTopkIds(), offsets = op.getGroupOffsets();
  Value sorted = op.getSortedRows(), positions = op.getRowPositions();
  Value numExperts = lb.dim(offsets, 0);
  Value topk = lb.dim(ids, 1);
  Value none = lb.idx(-1);
  lb.fill(sorted, none);
  // Expert e fills [begin_e, end_e) of sorted_rows through a cursor starting
  // at begin_e. The ranges are clamped like grouped_matmul's, so offsets that
  // do not match topk_ids drop rows (position -1) instead of writing out of
  // bounds.
  auto cursorType = MemRefType::get({ShapedType::kDynamic}, b.getI32Type());
  Value cursor = lb.alloc(cursorType, numExperts);
  Value limit = lb.alloc(cursorType, numExperts);
  lb.forEachGroup(offsets, numExperts, lb.dim(sorted, 0),
                  [&](Value e, Value begin, Value end) {
                    lb.storeIndex(begin, cursor, e);
                    lb.storeIndex(end, limit, e);
                  });
  forEachRow(lb, ids, lb.minDim({{ids, 0}, {positions, 0}}),
             lb.minDim({{ids, 1}, {positions, 1}}),
             [&](Value t, Value j, Value id) {
               lb.storeIndex(none, positions, {t, j});
               lb.ifThen(lb.inBounds(id, numExperts), [&] {
                 Value pos = lb.loadIndex(cursor, id);
                 Value free = lb.cmp(arith::CmpIPredicate::slt, pos,
                                     lb.loadIndex(limit, id));
                 lb.ifThen(free, [&] {
                   lb.storeIndex(lb.add(lb.mul(t, topk), j), sorted, pos);
                   lb.storeIndex(pos, positions, {t, j});
                   lb.storeIndex(lb.add(pos, lb.idx(1)), cursor, id);
                 });
               });
             });
  lb.dealloc(cursor);
  lb.dealloc(limit);
  return success();
}

LogicalResult host::lowerMoePermute(MoePermuteOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value x = op.getX(), rows = op.getSortedRows(), out = op.getOut();
  Value zero = lb.idx(0), hidden = lb.dim(x, 1);
  // Row r stands for slot r % topk of token r / topk.
  Value topk = lb.idx(op.getTopk());
  Value numRows = lb.mul(lb.dim(x, 0), topk);
  lb.forLoop(zero, lb.minDim({{rows, 0}, {out, 0}}), [&](Value p) {
    Value row = lb.loadIndex(rows, p);
    Value valid = lb.inBounds(row, numRows);
    lb.ifThenElse(
        valid,
        [&] {
          Value token = lb.div(row, topk);
          lb.forLoop(zero, hidden, [&](Value h) {
            // Same element type: a plain copy.
            Value v =
                memref::LoadOp::create(b, op.getLoc(), x, ValueRange{token, h});
            memref::StoreOp::create(b, op.getLoc(), v, out, ValueRange{p, h});
          });
        },
        [&] {
          lb.forLoop(zero, hidden, [&](Value h) {
            lb.storeF32(lb.f32(0), out, {p, h});
          });
        });
  });
  return success();
}

LogicalResult host::lowerMoeUnpermute(MoeUnpermuteOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value y = op.getY(), positions = op.getRowPositions();
  Value weights = op.getWeights(), out = op.getOut();
  Value zero = lb.idx(0), numRows = lb.dim(y, 0);
  Value numTokens = lb.minDim({{positions, 0}, {weights, 0}, {out, 0}});
  Value numSlots = lb.minDim({{positions, 1}, {weights, 1}});
  // One token's combined row, in f32 (the hidden dim is static: verifier).
  // The loop over slots is outside the loop over the hidden dim, so each
  // element still sums j = 0..k-1 in order (no fastmath flags: the order is
  // part of the op's definition).
  int64_t hiddenSize = cast<MemRefType>(y.getType()).getDimSize(1);
  Value hidden = lb.idx(hiddenSize);
  Value acc = lb.alloc(MemRefType::get({hiddenSize}, b.getF32Type()), {});
  lb.forLoop(zero, numTokens, [&](Value t) {
    lb.fill(acc, lb.f32(0));
    lb.forLoop(zero, numSlots, [&](Value j) {
      Value row = lb.loadIndex(positions, {t, j});
      lb.ifThen(lb.inBounds(row, numRows), [&] {
        Value w = lb.loadF32(weights, {t, j});
        lb.forLoop(zero, hidden, [&](Value h) {
          Value sum =
              lb.fadd(lb.loadF32(acc, h), lb.fmul(w, lb.loadF32(y, {row, h})));
          lb.storeF32(sum, acc, h);
        });
      });
    });
    lb.forLoop(zero, hidden, [&](Value h) {
      lb.storeF32(lb.loadF32(acc, h), out, {t, h});
    });
  });
  lb.dealloc(acc);
  return success();
}
