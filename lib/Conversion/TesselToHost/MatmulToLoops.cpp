//===- MatmulToLoops.cpp - Ragged grouped matmuls as reference loops ------===//
//
// tessel.grouped_matmul (ragged M) and tessel.grouped_matmul_wgrad (ragged
// K). Groups are walked in order with their row ranges clamped into the
// buffers (LoopBuilder::forEachGroup). Accumulation is in f32; the loops are
// ordered so that the innermost one runs over contiguous memory, and the
// sums whose order the ops leave free carry fastmath flags, so that LLVM
// vectorizes them: a 4096x256x256 matmul runs in well under a second.
//
//===----------------------------------------------------------------------===//

#include "LoopUtils.h"

#include "tessel/Conversion/Utils/KernelParams.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;
using namespace mlir::tessel::host;

namespace {
/// Group g's B matrix, `[N, K]` with trans_b or `[K, N]`: the stacked operand
/// indexed at g, or the 2-D memref the pointer table points to. (Indexing
/// rather than a subview keeps the IR free of the affine maps that lowering
/// a subview needs.)
struct GroupMatrix {
  Value memref;
  /// The group index into a stacked operand; null for a pointer table.
  Value group;

  Value load(LoopBuilder &lb, Value i, Value j) const {
    if (group)
      return lb.loadF32(memref, {group, i, j});
    return lb.loadF32(memref, {i, j});
  }
};
} // namespace

static GroupMatrix groupMatrix(LoopBuilder &lb, GroupedMatmulOp op, Value g) {
  Value b = op.getB();
  if (!op.isPointerTable())
    return {b, g};
  // Table entries are addresses of row-major b_shape matrices with the
  // element type of `a`: each becomes a memref the way kernel entry points
  // wrap their buffer parameters, an LLVM descriptor cast to the memref type
  // (the cast folds away when memrefs are lowered to LLVM), so the loops read
  // the matrix in place like a stacked operand.
  OpBuilder &builder = lb.builder();
  Location loc = lb.location();
  Value address = memref::LoadOp::create(builder, loc, b, g);
  Value ptr = LLVM::IntToPtrOp::create(
      builder, loc, LLVM::LLVMPointerType::get(builder.getContext()), address);
  ArrayRef<int64_t> shape = *op.getBShape();
  KernelArg matrix;
  matrix.type = MemRefType::get(
      shape, cast<MemRefType>(op.getA().getType()).getElementType());
  for (int64_t size : shape) {
    KernelDim dim;
    dim.constant = size;
    matrix.dims.push_back(dim);
  }
  return {buildArgMemRef(builder, loc, matrix, ptr, /*symbols=*/{}), Value()};
}

namespace {
/// The row of an operand that product row t reads: t, or the row an index
/// (a_rows / b_rows) gathers, with whether it lies inside the operand (an
/// entry outside [0, rows * divisor) reads as zeros).
struct SourceRow {
  Value row;
  /// Null when the row is read in order (always inside).
  Value inside;
};
} // namespace

static SourceRow sourceRow(LoopBuilder &lb, Value operand, Value index,
                           int64_t divisor, Value t) {
  if (!index)
    return {t, Value()};
  Value entry = lb.loadIndex(index, {t});
  Value d = lb.idx(divisor);
  return {lb.div(entry, d), lb.inBounds(entry, lb.mul(lb.dim(operand, 0), d))};
}

/// c[t, :] = a[s, :] . bg^T with bg `[N, K]`: one dot product per column,
/// both operands contiguous along K.
static void rowTimesTransposed(LoopBuilder &lb, Value a, const GroupMatrix &bg,
                               Value c, Value t, Value s, Value n, Value k) {
  Value zero = lb.idx(0);
  lb.forLoop(zero, n, [&](Value j) {
    Value dot = lb.forLoop(
        zero, k, lb.f32(0), [&](Value i, ValueRange sum) -> SmallVector<Value> {
          return {lb.mulAddFree(sum.front(), lb.loadF32(a, {s, i}),
                                bg.load(lb, j, i))};
        })[0];
    lb.storeF32(dot, c, {t, j});
  });
}

/// c[t, :] = a[s, :] . bg with bg `[K, N]`: rows of bg scaled by a[s, i] are
/// added into the f32 row `acc`, contiguous along N.
static void rowTimes(LoopBuilder &lb, Value a, const GroupMatrix &bg, Value c,
                     Value acc, Value t, Value s, Value n, Value k) {
  Value zero = lb.idx(0);
  lb.fill(acc, lb.f32(0));
  lb.forLoop(zero, k, [&](Value i) {
    Value x = lb.loadF32(a, {s, i});
    lb.forLoop(zero, n, [&](Value j) {
      lb.storeF32(lb.mulAddFree(lb.loadF32(acc, j), x, bg.load(lb, i, j)), acc,
                  j);
    });
  });
  lb.forLoop(zero, n, [&](Value j) {
    lb.storeF32(lb.loadF32(acc, j), c, {t, j});
  });
}

LogicalResult host::lowerGroupedMatmul(GroupedMatmulOp op, OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value a = op.getA(), c = op.getC(), offsets = op.getGroupOffsets();
  int64_t n = op.getN();
  Value numCols = lb.idx(n), k = lb.idx(op.getK());
  Value aRows = op.getARows();
  Value rows =
      aRows ? lb.minDim({{aRows, 0}, {c, 0}}) : lb.minDim({{a, 0}, {c, 0}});
  Value numGroups = lb.minDim({{offsets, 0}, {op.getB(), 0}});
  bool transB = op.getTransB();
  Value acc =
      transB ? Value() : lb.alloc(MemRefType::get({n}, b.getF32Type()), {});
  auto zeroRow = [&](Value t) {
    lb.forLoop(lb.idx(0), numCols, [&](Value j) {
      lb.storeF32(lb.f32(0), c, {t, j});
    });
  };
  Value lastEnd = lb.forEachGroup(
      offsets, numGroups, rows, [&](Value g, Value begin, Value end) {
        GroupMatrix bg = groupMatrix(lb, op, g);
        lb.forLoop(begin, end, [&](Value t) {
          SourceRow s = sourceRow(lb, a, aRows, op.getRowsDivisorOrOne(), t);
          auto product = [&] {
            if (transB)
              rowTimesTransposed(lb, a, bg, c, t, s.row, numCols, k);
            else
              rowTimes(lb, a, bg, c, acc, t, s.row, numCols, k);
          };
          if (s.inside)
            lb.ifThenElse(s.inside, product, [&] { zeroRow(t); });
          else
            product();
        });
      });
  // Rows past the last group belong to none: they are zero.
  lb.forLoop(lastEnd, rows, zeroRow);
  if (acc)
    lb.dealloc(acc);
  // The fused SwiGLU reads c's rounded elements back.
  if (Value act = op.getAct())
    swigluLoops(b, op.getLoc(), c, act);
  return success();
}

LogicalResult host::lowerGroupedMatmulWgrad(GroupedMatmulWgradOp op,
                                            OpBuilder &b) {
  LoopBuilder lb(b, op.getLoc());
  Value a = op.getA(), bMat = op.getB(), c = op.getC();
  Value offsets = op.getGroupOffsets();
  Value zero = lb.idx(0);
  // M and N are static (verifier); rows and groups may be dynamic.
  int64_t m = cast<MemRefType>(a.getType()).getDimSize(1);
  int64_t n = cast<MemRefType>(bMat.getType()).getDimSize(1);
  Value mSize = lb.idx(m), nSize = lb.idx(n);
  Value aRows = op.getARows(), bRows = op.getBRows();
  int64_t divisor = op.getRowsDivisorOrOne();
  Value rows = lb.minDim({{aRows ? aRows : a, 0}, {bRows ? bRows : bMat, 0}});
  Value numGroups = lb.minDim({{offsets, 0}, {c, 0}});
  // c[g] is the sum over the group's rows of outer products
  // a[t, :]^T b[t, :], accumulated in f32 with the innermost loop along a
  // row of b; an empty group leaves the zeroed accumulator.
  Value acc = lb.alloc(MemRefType::get({m, n}, b.getF32Type()), {});
  lb.forEachGroup(offsets, numGroups, rows,
                  [&](Value g, Value begin, Value end) {
                    lb.fill(acc, lb.f32(0));
                    lb.forLoop(begin, end, [&](Value t) {
                      SourceRow sa = sourceRow(lb, a, aRows, divisor, t);
                      SourceRow sb = sourceRow(lb, bMat, bRows, divisor, t);
                      auto outer = [&] {
                        lb.forLoop(zero, mSize, [&](Value i) {
                          Value x = lb.loadF32(a, {sa.row, i});
                          lb.forLoop(zero, nSize, [&](Value j) {
                            Value sum =
                                lb.mulAddFree(lb.loadF32(acc, {i, j}), x,
                                              lb.loadF32(bMat, {sb.row, j}));
                            lb.storeF32(sum, acc, {i, j});
                          });
                        });
                      };
                      // A row read as zeros adds nothing.
                      Value inside = sa.inside ? sa.inside : sb.inside;
                      if (sa.inside && sb.inside)
                        inside = arith::AndIOp::create(b, op.getLoc(),
                                                       sa.inside, sb.inside);
                      if (inside)
                        lb.ifThen(inside, outer);
                      else
                        outer();
                    });
                    lb.forLoop(zero, mSize, [&](Value i) {
                      lb.forLoop(zero, nSize, [&](Value j) {
                        lb.storeF32(lb.loadF32(acc, {i, j}), c, {g, i, j});
                      });
                    });
                  });
  lb.dealloc(acc);
  return success();
}
