//===- KernelBuilder.cpp - What every GPU kernel template builds with -----===//

#include "KernelBuilder.h"

#include "tessel/Target/WarpgroupMma.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

#include <numeric>

using namespace mlir;
using namespace mlir::tessel;

LogicalResult mlir::tessel::checkChunkRows(Operation *op, StringRef what,
                                          int64_t size, Type elem) {
  int64_t elements = 16 / (elem.getIntOrFloatBitWidth() / 8);
  if (size % elements == 0)
    return success();
  return op->emitOpError() << "GPU template: " << what << " (" << size
                           << ") must be a multiple of " << elements
                           << " for " << elem
                           << ", so that every row is made of 16-byte chunks";
}

FailureOr<SmallVector<MmaAtom>>
mlir::tessel::f32AccumulatorAtoms(Operation *op, const TargetInfo &target,
                                  Type elem) {
  SmallVector<MmaAtom> atoms =
      target.getMmaAtoms(elem, Float32Type::get(op->getContext()));
  if (atoms.empty())
    return op->emitOpError() << "GPU template: " << target.getChip()
                             << " has no MMA for " << elem
                             << " operands with f32 accumulation";
  return atoms;
}

void KernelBuilder::ifThen(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  body();
}

SmallVector<Value, 3> KernelBuilder::l2LocalBlockIds(ArrayRef<Value> sizes) {
  int64_t parts = target.getL2Partitions();
  if (parts == 1)
    return {};
  SmallVector<Value, 3> ids = {blockId(gpu::Dimension::x),
                               blockId(gpu::Dimension::y),
                               blockId(gpu::Dimension::z)};
  auto divide = [&](Value x, Value y) -> Value {
    return arith::DivUIOp::create(b, loc, x, y);
  };
  Value linear = add(mul(add(mul(ids[2], sizes[1]), ids[1]), sizes[0]), ids[0]);
  Value count = mul(mul(sizes[0], sizes[1]), sizes[2]);
  // Partition p gets workgroups p, p + parts, ...: perPart of them for the
  // first `full` partitions, one fewer for the rest; its k-th becomes
  // number (the blocks of the partitions before it) + k.
  Value perPart = arith::CeilDivUIOp::create(b, loc, count, idx(parts));
  Value full = sub(count, mul(sub(perPart, idx(1)), parts));
  Value part = remu(linear, parts), k = divu(linear, parts);
  Value early = add(mul(part, perPart), k);
  Value late = add(
      add(mul(full, perPart), mul(sub(part, full), sub(perPart, idx(1)))), k);
  Value renumbered = select(ult(part, full), early, late);
  Value rest = divide(renumbered, sizes[0]);
  return {arith::RemUIOp::create(b, loc, renumbered, sizes[0]),
          arith::RemUIOp::create(b, loc, rest, sizes[1]),
          divide(rest, sizes[1])};
}

Value KernelBuilder::warpScan(Value x,
                              function_ref<Value(Value, Value)> combine,
                              Value identity) {
  for (int64_t step = 0; (int64_t(1) << step) < warpSize; ++step) {
    // Lanes without a partner keep their value.
    auto [partner, valid] = target.scanPartner(b, loc, x, step, identity);
    x = valid ? select(valid, combine(x, partner), x) : combine(x, partner);
  }
  return x;
}

Value KernelBuilder::warpReduce(Value x,
                                function_ref<Value(Value, Value)> combine,
                                int64_t width) {
  if (width <= 0)
    width = warpSize;
  for (int64_t d = 1; d < width; d *= 2)
    x = target.butterflyStep(b, loc, x, d, combine);
  return x;
}

Value KernelBuilder::broadcast(Value x, Value srcLane) {
  return gpu::ShuffleOp::create(b, loc, x, srcLane, i32(warpSize),
                                gpu::ShuffleMode::IDX)
      .getShuffleResult();
}

Value KernelBuilder::countLanes(Value pred) {
  if (Value count = target.countLanes(b, loc, pred))
    return count;
  return warpReduce(
      arith::ExtUIOp::create(b, loc, b.getI32Type(), pred),
      [&](Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); });
}

Value KernelBuilder::anyLane(Value pred) {
  Value lanes = target.ballot(b, loc, pred);
  return arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne, lanes,
      arith::ConstantIntOp::create(b, loc, lanes.getType(), 0));
}

std::pair<Value, Value> KernelBuilder::ringUse(Value use, int64_t stages,
                                               bool flip) {
  Value u = toI32(use), count = i32(stages);
  Value round = arith::DivUIOp::create(b, loc, u, count);
  Value parity = arith::AndIOp::create(b, loc, round, i32(1));
  if (flip)
    parity = arith::XOrIOp::create(b, loc, parity, i32(1));
  return {toIndex(arith::RemUIOp::create(b, loc, u, count)), parity};
}

std::pair<Value, Value> KernelBuilder::nextRingUse(Value stage, Value parity,
                                                   int64_t stages) {
  Type type = stage.getType();
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, v));
  };
  Value next = arith::AddIOp::create(b, loc, stage, constant(1));
  Value wrap = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, next,
                                     constant(stages));
  return {select(wrap, constant(0), next),
          select(wrap, arith::XOrIOp::create(b, loc, parity, i32(1)), parity)};
}

std::pair<Value, Value> KernelBuilder::gatherEntry(Value index, Value r,
                                                   Value inside, Value limit) {
  auto load = scf::IfOp::create(b, loc, TypeRange{b.getIndexType()}, inside,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(load.thenBlock());
    scf::YieldOp::create(b, loc,
                         toIndex(memref::LoadOp::create(b, loc, index, r)));
    b.setInsertionPointToStart(load.elseBlock());
    scf::YieldOp::create(b, loc, limit);
  }
  Value entry = load.getResult(0);
  // A negative entry is a huge unsigned one: outside, as one past the end.
  return {entry, ult(entry, limit)};
}

Value KernelBuilder::uniform(Value x) {
  Type type = x.getType();
  Value word = type.isIndex() ? toI32(x)
                              : arith::ExtUIOp::create(b, loc, b.getI32Type(),
                                                       x).getResult();
  word = broadcast(word, i32(0));
  if (type.isIndex())
    return toIndex(word);
  return arith::TruncIOp::create(b, loc, type, word);
}

/// Elements of one global access of `elem`, and its alignment in bytes, for
/// a run of `elements`.
static std::pair<int64_t, int64_t> vectorPiece(Type elem, int64_t elements,
                                               int64_t maxBytes) {
  int64_t bytes = elem.getIntOrFloatBitWidth() / 8;
  int64_t piece = std::min(elements, maxBytes / bytes);
  assert(elements % piece == 0 && "a run of whole pieces");
  return {piece, piece * bytes};
}

Value KernelBuilder::loadVector(Value memref, ValueRange indices,
                                int64_t elements) {
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  auto [piece, align] =
      vectorPiece(elem, elements, target.getMaxVectorBytes());
  auto pieceType = VectorType::get({piece}, elem);
  Value result;
  SmallVector<Value> at(indices);
  for (int64_t offset = 0; offset < elements; offset += piece) {
    at.back() = add(indices.back(), offset);
    Value part = vector::LoadOp::create(b, loc, pieceType, memref, at,
                                        /*nontemporal=*/false,
                                        llvm::MaybeAlign(align));
    // Appended by a 1-D shuffle (strided-slice ops have no direct LLVM
    // lowering in the ROCDL conversion).
    result = result ? vector::ShuffleOp::create(
                          b, loc, result, part,
                          llvm::to_vector(llvm::seq<int64_t>(0, offset + piece)))
                          .getResult()
                    : part;
  }
  return result;
}

void KernelBuilder::storeVector(Value vec, Value memref, ValueRange indices) {
  Type elem = cast<MemRefType>(memref.getType()).getElementType();
  int64_t elements = cast<VectorType>(vec.getType()).getNumElements();
  auto [piece, align] =
      vectorPiece(elem, elements, target.getMaxVectorBytes());
  SmallVector<Value> at(indices);
  for (int64_t offset = 0; offset < elements; offset += piece) {
    at.back() = add(indices.back(), offset);
    Value part = piece == elements
                     ? vec
                     : vector::ShuffleOp::create(
                           b, loc, vec, vec,
                           llvm::to_vector(
                               llvm::seq<int64_t>(offset, offset + piece)));
    vector::StoreOp::create(b, loc, part, memref, at, /*nontemporal=*/false,
                            llvm::MaybeAlign(align));
  }
}

Value KernelBuilder::convertFloat(Value x, Type elem) {
  Type type = x.getType();
  Type from = getElementTypeOrSelf(type);
  if (from == elem)
    return x;
  Type to = isa<VectorType>(type) ? cast<VectorType>(type).clone(elem) : elem;
  if (from.getIntOrFloatBitWidth() < elem.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, to, x);
  return arith::TruncFOp::create(b, loc, to, x);
}

Value KernelBuilder::exp(Value x) {
  Value scaled = arith::MulFOp::create(b, loc, x, f32(llvm::numbers::log2e));
  return target.exp2(b, loc, scaled);
}

Value KernelBuilder::sigmoid(Value x) {
  Value denominator = arith::AddFOp::create(
      b, loc, f32(1), exp(arith::NegFOp::create(b, loc, x).getResult()));
  // An approximate reciprocal (rcp.approx, v_rcp_f32: 1 ulp): the IEEE
  // division's slow path cost the grouped matmul's fused SwiGLU epilogue
  // its registers (it spilled on sm_90a).
  return arith::DivFOp::create(b, loc, f32(1), denominator,
                               arith::FastMathFlags::afn);
}

Value KernelBuilder::swiglu(Value gate, Value up) {
  return arith::MulFOp::create(
      b, loc, arith::MulFOp::create(b, loc, gate, sigmoid(gate)), up);
}

Value KernelBuilder::log(Value x) {
  return arith::MulFOp::create(b, loc, target.log2(b, loc, x),
                               f32(llvm::numbers::ln2));
}

Value KernelBuilder::dynamicSharedBytes() {
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  return gpu::DynamicSharedMemoryOp::create(
      b, loc,
      MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                      MemRefLayoutAttrInterface(), workgroup));
}

void KernelBuilder::warpgroupRoles(
    const WarpgroupMma &wg, ArrayRef<std::pair<Value, int64_t>> barriers,
    function_ref<void()> producer, function_ref<void(Value)> consumer,
    function_ref<Value()> active, WarpgroupMma::RegisterSplit registers) {
  Value thread = threadId();
  ifThen(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, thread,
                               idx(0)),
         [&] {
           for (auto [bar, arrivals] : barriers)
             wg.barrierInit(b, loc, bar, arrivals);
           wg.barrierInitFence(b, loc);
         });
  gpu::BarrierOp::create(b, loc);
  auto roles = [&] {
    Value role = uniform(divu(thread, WarpgroupMma::kWarpgroupThreads));
    auto ifOp = scf::IfOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, role, idx(0)),
        /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    wg.setRegisters(b, loc, registers.producer,
                    /*increase=*/false);
    producer();
    b.setInsertionPointToStart(ifOp.elseBlock());
    wg.setRegisters(b, loc, registers.consumer,
                    /*increase=*/true);
    consumer(sub(role, idx(1)));
  };
  if (active)
    ifThen(uniform(active()), roles);
  else
    roles();
}

std::pair<Value, Value> KernelBuilder::alignedSharedBase(int64_t alignment) {
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(
      b, loc, dynamicSharedBytes());
  Value aligned =
      mul(arith::CeilDivUIOp::create(b, loc, base, idx(alignment)), alignment);
  Value pointer = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 3),
      arith::IndexCastOp::create(b, loc, b.getI64Type(), aligned).getResult());
  return {pointer, toI32(aligned)};
}

Value KernelBuilder::globalPointer(Value address) {
  return LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), 1), address);
}

Value KernelBuilder::globalMatrix(Value operand) {
  return globalPointer(arith::IndexCastOp::create(
      b, loc, b.getI64Type(),
      memref::ExtractAlignedPointerAsIndexOp::create(b, loc, operand)));
}

Value KernelBuilder::globalElement(Value matrix, Type elem, Value element) {
  return LLVM::GEPOp::create(
      b, loc, matrix.getType(), elem, matrix,
      ValueRange{arith::IndexCastOp::create(b, loc, b.getI64Type(), element)
                     .getResult()});
}

Value KernelBuilder::sharedByte(Value base, Value offset) {
  return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                             ValueRange{toI32(offset)});
}

Value KernelBuilder::sharedView(Value bytes, int64_t offset,
                                ArrayRef<int64_t> shape, Type elem) {
  return sharedView(bytes, idx(offset), shape, elem);
}

Value KernelBuilder::sharedView(Value bytes, Value offset,
                                ArrayRef<int64_t> shape, Type elem) {
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  auto type =
      MemRefType::get(shape, elem, MemRefLayoutAttrInterface(), workgroup);
  return memref::ViewOp::create(b, loc, type, bytes, offset, ValueRange{});
}

SmallVector<Value> KernelBuilder::swizzledIndices(ValueRange outer, Value row,
                                                  Value col, int64_t width,
                                                  bool rowGroups) {
  // Rows of `width` elements are width/8 chunks; a 128-byte bank line holds
  // 8/(width/8) rows (or a row spans several lines). XOR the chunk with
  // (row / rowsPerLine) % min(chunks, 8) so that 8 consecutive rows at one
  // chunk fill 8 different 16-byte slots of a bank line. For rows of 8 or
  // more chunks only the low 3 bits of the chunk change, so a chunk stays in
  // its row (width is then a multiple of 64).
  Value swz = swizzleOf(row, width, rowGroups);
  Value chunk = arith::XOrIOp::create(b, loc, divu(col, kChunk), swz);
  SmallVector<Value> indices(outer);
  indices.push_back(row);
  indices.push_back(add(mul(chunk, kChunk), remu(col, kChunk)));
  return indices;
}

Value KernelBuilder::swizzledOffset(Value stage, int64_t rows, Value row,
                                    Value col, int64_t width) {
  int64_t chunks = width / kChunk;
  int64_t rowPeriod =
      std::max<int64_t>(1, kChunk / chunks) * std::min<int64_t>(chunks, 8);
  int64_t colPeriod = chunks >= 8 ? 8 * kChunk : 0;
  auto [rowVar, rowConst] = peelConstant(row);
  auto [colVar, colConst] = peelConstant(col);
  int64_t rowHigh = rowConst - rowConst % rowPeriod;
  int64_t colHigh = colPeriod ? colConst - colConst % colPeriod : 0;
  SmallVector<Value> indices = swizzledIndices(
      {}, add(rowVar ? rowVar : idx(0), idx(rowConst - rowHigh)),
      add(colVar ? colVar : idx(0), idx(colConst - colHigh)), width);
  int64_t constant = rowHigh * width + colHigh;
  Value varRows = indices[0];
  if (auto s = getConstantIntValue(stage))
    constant += *s * rows * width;
  else
    varRows = add(mul(stage, rows), varRows);
  return add(add(mul(varRows, width), indices[1]), idx(constant));
}

std::pair<Value, Value> KernelBuilder::chunkMajorElement(Value ring,
                                                         Value stage, Value row,
                                                         Value col) {
  auto type = cast<MemRefType>(ring.getType());
  ArrayRef<int64_t> shape = type.getShape();
  auto view = ring.getDefiningOp<memref::ViewOp>();
  assert(view && shape.size() == 4 && shape[3] == kChunk &&
         "a chunk-major ring carved by sharedView");
  int64_t chunks = shape[1], rows = shape[2];
  auto [rowVar, rowConst] = peelConstant(row);
  auto [colVar, colConst] = peelConstant(col);
  // Only whole chunks of a non-negative constant leave the column: the
  // rest stays under its division.
  int64_t colHigh = colConst > 0 ? colConst - colConst % kChunk : 0;
  Value c = add(colVar ? colVar : idx(0), idx(colConst - colHigh));
  Value chunk = divu(c, kChunk);
  Value offset =
      add(mul(add(mul(chunk, rows), rowVar ? rowVar : idx(0)), kChunk),
          remu(c, kChunk));
  int64_t constant = (colHigh / kChunk * rows + rowConst) * kChunk;
  if (constant < 0) {
    offset = add(offset, idx(constant));
    constant = 0;
  }
  // In bytes: scaled before the view adds its start, the lanes' offsets
  // share more of their arithmetic (one shift, not one each). The view
  // starts at the stage, the ring's own start (a constant) in the offsets:
  // with a loop-carried stage, one add an address a tile, the offsets
  // loop-invariant (ds_write2_b32's 8-bit offsets hold no ring start:
  // added to the stage's, it took an add more a tile).
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  int64_t stageElements = chunks * rows * kChunk;
  Value start = view.getByteShift();
  int64_t ringStart = getConstantIntValue(start).value_or(0);
  if (ringStart)
    start = idx(0);
  Value flat = sharedView(
      view.getSource(),
      add(add(start, mul(stage, stageElements * bytes)), idx(constant * bytes)),
      {ringStart + (stageElements - constant) * bytes}, b.getI8Type());
  return {flat, add(mul(offset, bytes), idx(ringStart))};
}

std::pair<Value, int64_t> KernelBuilder::peelConstant(Value v) {
  if (auto c = getConstantIntValue(v))
    return {Value(), *c};
  if (auto subOp = v.getDefiningOp<arith::SubIOp>()) {
    auto [x, cx] = peelConstant(subOp.getLhs());
    auto [y, cy] = peelConstant(subOp.getRhs());
    if (x == subOp.getLhs() && y == subOp.getRhs())
      return {v, 0};
    if (!y)
      return {x, cx - cy};
    return {sub(x ? x : idx(0), y), cx - cy};
  }
  auto addOp = v.getDefiningOp<arith::AddIOp>();
  if (!addOp)
    return {v, 0};
  auto [x, cx] = peelConstant(addOp.getLhs());
  auto [y, cy] = peelConstant(addOp.getRhs());
  if (x == addOp.getLhs() && y == addOp.getRhs())
    return {v, 0};
  if (!x || !y)
    return {x ? x : y, cx + cy};
  return {add(x, y), cx + cy};
}

Value KernelBuilder::swizzleOf(Value row, int64_t width, bool rowGroups) {
  int64_t chunks = width / kChunk;
  int64_t rowsPerLine = std::max<int64_t>(1, kChunk / chunks);
  Value line = divu(row, rowsPerLine);
  if (rowGroups)
    line = arith::XOrIOp::create(b, loc, line, divu(line, 8));
  return remu(line, std::min<int64_t>(chunks, 8));
}

void KernelBuilder::loadChunksToShared(TilePipeline &p,
                                       ChunkEnumerator forEachChunk) {
  assert(target.hasBufferLoadsToShared());
  p.loadToShared = [this, forEachChunk](Value stage, Value tile) {
    forEachChunk(stage, tile, {}, [&](const StagedChunk &c) {
      assert(c.window && c.scatter.empty() && !c.partial &&
             !c.waveDst.empty() &&
             "loads to shared memory take whole windowed chunks");
      target.bufferLoadToShared(b, loc, c.window, c.windowOffset, c.tileOffset,
                                c.shared, c.waveDst, c.immediateOffset);
    });
  };
}

KernelBuilder::M0Slot KernelBuilder::m0Slot(int64_t i, int64_t copies,
                                            int64_t waves, Value waveIndex,
                                            int64_t blockSlots) {
  constexpr int64_t kSlotBytes = 16, kImmediateLimit = 4096;
  int64_t share = kImmediateLimit / (warpSize * kSlotBytes);
  while (share > 1 && (copies % share || blockSlots % (share * warpSize)))
    share /= 2;
  Value runStart =
      mul(add(mul(waveIndex, share), i / share * waves * share), warpSize);
  return {add(runStart, idx(i % share * warpSize)), runStart,
          i % share * warpSize * kSlotBytes};
}

void KernelBuilder::moveToImmediateOffset(StagedChunk &chunk, int64_t bytes) {
  if (!bytes)
    return;
  chunk.immediateOffset = bytes;
  chunk.windowOffset = arith::SubIOp::create(
      b, loc, chunk.windowOffset,
      arith::ConstantIntOp::create(b, loc, b.getI32Type(), bytes));
}

void KernelBuilder::issueLoadsAfterReads() {
  if (!loadsAfterReads)
    return;
  // Behind a fence: the back end does not see a load to LDS as a write of
  // it, so it would hoist the loads above the reads, and then wait for
  // them (vmcnt(0)) before the reads.
  target.fenceScheduling(b, loc);
  std::exchange(loadsAfterReads, nullptr)();
}

LogicalResult KernelBuilder::runTilePipeline(const TilePipeline &p,
                                             SmallVector<Value> &state) {
  bool async = target.getAsyncCopyBytes() > 0;
  // Register-staged: two stages, or one where shared memory is short.
  int64_t stages = async ? p.stages : std::min<int64_t>(p.stages, 2);
  if (async) {
    // A static tile count skips prologue tiles that do not exist; with a
    // dynamic one they are issued anyway (zero-filled copies).
    std::optional<int64_t> staticTiles = getConstantIntValue(p.numTiles);
    for (int64_t s = 0; s < stages - 1; ++s) {
      if (!staticTiles || s < *staticTiles)
        p.issue(idx(s), idx(s));
      if (failed(target.asyncCommit(b, loc)))
        return failure();
    }
  } else if (stages == 2 && p.pairStages) {
    return runRegisterStagedPairs(p, state);
  }
  // Register-staged: tile 0 stored (or loaded to shared memory), tile 1's
  // lookahead values loaded; the loop carries the next tile's after its
  // own state.
  SmallVector<Value> init(state), ahead;
  if (p.loadToShared) {
    assert(stages == 2 && !p.lookahead && p.fetchPastEnd &&
           "loads to shared memory fill the other of two stages");
    p.loadToShared(idx(0), idx(0));
  } else if (!async) {
    if (p.lookahead)
      ahead = p.lookahead(idx(0));
    p.store(idx(0), idx(0), p.fetch(idx(0), ahead));
    ahead = p.lookahead ? p.lookahead(idx(1)) : SmallVector<Value>{};
    init.append(ahead);
  }
  if (!async && stages == 2)
    init.push_back(i32(0));
  assert((!p.tailFrom || !async) && "a tail loop needs register-staged tiles");
  SmallVector<Value> carried(init);
  if (failed(runTileLoop(p, idx(0), p.tailFrom ? p.tailFrom : p.numTiles,
                         p.compute, state.size(), carried)) ||
      (p.tailFrom && failed(runTileLoop(p, p.tailFrom, p.numTiles,
                                        p.tailCompute, state.size(), carried))))
    return failure();
  // The last tile loaded one past the end: retired before the block's LDS
  // is reused (or freed, with the loads still writing it).
  if (p.loadToShared)
    target.waitForLoadsToShared(b, loc, 0);
  state.assign(carried.begin(), carried.begin() + state.size());
  return success();
}

static LLVM::LoopAnnotationAttr noUnrollAnnotation(MLIRContext *ctx) {
  auto unroll = LLVM::LoopUnrollAttr::get(ctx, BoolAttr::get(ctx, true), {}, {},
                                          {}, {}, {}, {});
  return LLVM::LoopAnnotationAttr::get(ctx, {}, {}, {}, unroll, {}, {}, {}, {},
                                       {}, {}, {}, {}, {}, {}, {});
}

LogicalResult KernelBuilder::runTileLoop(const TilePipeline &p, Value from,
                                         Value to, const TileCompute &compute,
                                         size_t stateSize,
                                         SmallVector<Value> &carriedIn) {
  bool async = target.getAsyncCopyBytes() > 0;
  int64_t stages = async ? p.stages : std::min<int64_t>(p.stages, 2);
  // Register-staged (CDNA) loops count in 32 bits: its scalar unit adds
  // and compares 64 bits in three instructions, 32 in two.
  auto count = [&](Value i) { return async ? i : toI32(i); };
  auto loop = scf::ForOp::create(b, loc, count(from), count(to), count(idx(1)),
                                 carriedIn);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value t = loop.getInductionVar();
  if (!async)
    t = toIndex(t);
  // Two register-staged stages: the loop carries (last) tile t's stage
  // times TilePipeline::stageBytes, flipped by one XOR a tile (t % 2 took
  // a shift where each stage was used: 3 scalar instructions a tile).
  bool carriedStage = !async && stages == 2;
  int64_t unit = p.stageBytes ? p.stageBytes : 1;
  assert(llvm::isPowerOf2_64(unit) && "the stage's offset shifts back exactly");
  Value stage = carriedStage ? loop.getRegionIterArgs().back() : Value();
  // Flipped where first used: with register-staged tiles after the
  // compute, which the old one may reach out of line (the attention loops'
  // rescale); flipped before it, the back end copied it a tile.
  Value nextStageValue;
  auto nextStage = [&] {
    if (carriedStage && !nextStageValue)
      nextStageValue = arith::XOrIOp::create(b, loc, stage, i32(unit));
    return nextStageValue;
  };
  auto stageOf = [&](Value tile, Value s) {
    if (!carriedStage)
      return remu(tile, stages);
    // Exact: the shift of the stage's offset back where used folds away.
    return toIndex(arith::ShRUIOp::create(b, loc, s, i32(llvm::Log2_64(unit)),
                                          b.getUnitAttr()));
  };
  if (async && failed(target.asyncWait(b, loc, stages - 2)))
    return failure();
  // Loads to shared memory: this wave's of tile t have landed before the
  // barrier after which every wave reads them. (Not a deeper ring: with a
  // third stage, tile t + 1's loads in flight across the back edge, LLVM
  // 22 waited for them before tile t's first read all the same.)
  if (p.loadToShared)
    target.waitForLoadsToShared(b, loc, 0);
  gpu::BarrierOp::create(b, loc);
  Value next = add(t, async ? stages - 1 : 1);
  Value hasNext = lt(next, p.numTiles);
  SmallVector<Value> fetched, ahead;
  if (p.loadToShared) {
    // Into the stage every wave is past (the barrier), right away: the
    // compute's reads of the other stage do not wait for them (the back
    // end knows they do not alias: tessel-loads-to-shared-scopes).
    p.loadToShared(stageOf(next, nextStage()), next);
  } else if (async) {
    ifThen(hasNext, [&] { p.issue(remu(next, stages), next); });
    if (failed(target.asyncCommit(b, loc)))
      return failure();
  } else {
    ValueRange nextAhead =
        loop.getRegionIterArgs().drop_front(stateSize).drop_back(carriedStage);
    fetched = p.fetchPastEnd ? p.fetch(next, nextAhead)
                             : fetchWhere(p, hasNext, next, nextAhead);
    // Issued after tile t+1's loads, so the wait for those (before they
    // are stored) covers these too.
    ahead = p.lookahead ? p.lookahead(add(t, 2)) : SmallVector<Value>{};
  }
  SmallVector<Value> carried(loop.getRegionIterArgs().take_front(stateSize));
  if (failed(compute(stageOf(t, stage), t, carried)))
    return failure();
  if (!async && !p.loadToShared) {
    // One stage: every warp is done with tile t before tile t+1 replaces
    // it.
    if (stages == 1)
      gpu::BarrierOp::create(b, loc);
    // (Made outside the branch: the loop yields the flipped stage.)
    Value storeStage = stageOf(next, nextStage());
    if (p.storePastEnd)
      p.store(storeStage, next, fetched);
    else
      ifThen(hasNext, [&] { p.store(storeStage, next, fetched); });
    carried.append(ahead);
  }
  if (carriedStage)
    carried.push_back(nextStage());
  scf::YieldOp::create(b, loc, carried);
  carriedIn.assign(loop.getResults().begin(), loop.getResults().end());
  return success();
}

SmallVector<Value> KernelBuilder::fetchWhere(const TilePipeline &p, Value cond,
                                             Value t, ValueRange ahead) {
  SmallVector<Type> types(p.chunks, p.chunkType);
  auto ifOp = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, loc, p.fetch(t, ahead));
  b.setInsertionPointToStart(ifOp.elseBlock());
  Value zeros = arith::ConstantOp::create(b, loc, p.chunkType,
                                          b.getZeroAttr(p.chunkType));
  scf::YieldOp::create(b, loc, SmallVector<Value>(p.chunks, zeros));
  return SmallVector<Value>(ifOp.getResults());
}

LogicalResult KernelBuilder::runRegisterStagedPairs(const TilePipeline &p,
                                                    SmallVector<Value> &state) {
  assert(!p.lookahead && "paired stages load nothing ahead");
  bool toShared = bool(p.loadToShared);
  Value odd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                    remu(p.numTiles, 2), idx(0));
  // Where tiles past the last are harmless, an odd count's tile 0 runs
  // alone first, from stage 1 (see below).
  Value firstStage = p.fetchPastEnd ? select(odd, idx(1), idx(0)) : idx(0);
  if (toShared)
    p.loadToShared(firstStage, idx(0));
  else
    p.store(firstStage, idx(0), p.fetch(idx(0), {}));
  // Tile t from `stage`: every warp is past tile t - 1 (whose stage the
  // step refills) and sees tile t stored; tile `next` (if any; where
  // `hasNext` holds, if given) is loaded before the MMAs and stored after
  // (loaded to shared memory: issued between the compute's reads and its
  // MMAs, and this wave's loads of tile t waited for before the barrier,
  // where the other waves' reads depend on them).
  auto step = [&](Value t, int64_t stage, Value next, Value hasNext,
                  SmallVector<Value> &st) -> LogicalResult {
    if (toShared) {
      target.waitForLoadsToShared(b, loc, 0);
      gpu::BarrierOp::create(b, loc);
      if (next)
        loadsAfterReads = [this, &p, stage, next, hasNext] {
          auto load = [&] { p.loadToShared(idx(1 - stage), next); };
          if (hasNext)
            ifThen(hasNext, load);
          else
            load();
        };
      LogicalResult computed = p.compute(idx(stage), t, st);
      issueLoadsAfterReads();
      return computed;
    }
    gpu::BarrierOp::create(b, loc);
    SmallVector<Value> fetched;
    // The tile's loads, its MMAs and the stores of the next tile in this
    // order: the back end had sunk loads stored as they come (no transpose
    // between) past the MMAs to their stores, or MMAs past the stores,
    // each store then waiting for its load at once.
    if (next) {
      fetched = hasNext ? fetchWhere(p, hasNext, next, {}) : p.fetch(next, {});
      target.fenceScheduling(b, loc);
    }
    if (failed(p.compute(idx(stage), t, st)))
      return failure();
    if (next)
      target.fenceScheduling(b, loc);
    auto store = [&] { p.store(idx(1 - stage), next, fetched); };
    if (hasNext)
      ifThen(hasNext, store);
    else if (next)
      store();
    return success();
  };
  // Pair i: tiles t = 2i and t + 1 < numTiles; t + 2 < numTiles but in
  // the last pair. That one comes after the loop (LLVM would peel it, but
  // the loop is kept from LLVM's unroller, which does both: K = 512's 4
  // pairs it unrolled whole on CDNA, 18 KB of code with the same waits a
  // tile; the annotation becomes loop metadata in tessel-loop-annotations,
  // ROCDL pipeline only).
  auto pair = [&](Value t, Value hasThird, SmallVector<Value> &st) {
    Value second = add(t, 1);
    return success(succeeded(step(t, 0, second, Value(), st)) &&
                   succeeded(step(second, 1, add(t, 2), hasThird, st)));
  };
  // Tiles past the last harmless (a dynamic count, as the wgrad's): the
  // odd tile, then every pair in the loop, each loading the tile after it.
  // Branches after the loop (the last pair, an odd last tile) made the
  // back end keep two copies of the accumulators they yield: gfx950's
  // 256x256 wgrad went to 256 VGPRs and 650 bytes of scratch. Before the
  // loop the accumulators are still the initial state.
  if (p.fetchPastEnd) {
    auto first = scf::IfOp::create(b, loc, ValueRange(state).getTypes(), odd,
                                   /*withElseRegion=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(first.thenBlock());
      SmallVector<Value> st(state);
      if (failed(step(idx(0), 1, idx(1), Value(), st)))
        return failure();
      scf::YieldOp::create(b, loc, st);
      b.setInsertionPointToStart(first.elseBlock());
      scf::YieldOp::create(b, loc, state);
    }
    state.assign(first.getResults().begin(), first.getResults().end());
    Value firstPaired = select(odd, idx(1), idx(0));
    auto loop =
        scf::ForOp::create(b, loc, idx(0), divu(p.numTiles, 2), idx(1), state);
    loop->setAttr("llvm.loop_annotation", noUnrollAnnotation(b.getContext()));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      SmallVector<Value> st(loop.getRegionIterArgs());
      if (failed(pair(add(firstPaired, mul(loop.getInductionVar(), 2)), Value(),
                      st)))
        return failure();
      scf::YieldOp::create(b, loc, st);
    }
    state.assign(loop.getResults().begin(), loop.getResults().end());
    // The last pair loaded one tile past the end.
    if (toShared)
      target.waitForLoadsToShared(b, loc, 0);
    return success();
  }
  Value pairs = divu(p.numTiles, 2);
  Value loopPairs = arith::MaxSIOp::create(b, loc, sub(pairs, idx(1)), idx(0));
  auto loop = scf::ForOp::create(b, loc, idx(0), loopPairs, idx(1), state);
  loop->setAttr("llvm.loop_annotation", noUnrollAnnotation(b.getContext()));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> st(loop.getRegionIterArgs());
    if (failed(pair(mul(loop.getInductionVar(), 2), Value(), st)))
      return failure();
    scf::YieldOp::create(b, loc, st);
  }
  state.assign(loop.getResults().begin(), loop.getResults().end());
  Value lastT = mul(loopPairs, 2);
  auto lastPair = scf::IfOp::create(b, loc, ValueRange(state).getTypes(),
                                    lt(idx(0), pairs), /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(lastPair.thenBlock());
    SmallVector<Value> st(state);
    if (failed(pair(lastT, odd, st)))
      return failure();
    scf::YieldOp::create(b, loc, st);
    b.setInsertionPointToStart(lastPair.elseBlock());
    scf::YieldOp::create(b, loc, state);
  }
  state.assign(lastPair.getResults().begin(), lastPair.getResults().end());
  auto last = scf::IfOp::create(b, loc, ValueRange(state).getTypes(), odd,
                                /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(last.thenBlock());
    SmallVector<Value> st(state);
    if (failed(step(sub(p.numTiles, idx(1)), 0, Value(), Value(), st)))
      return failure();
    scf::YieldOp::create(b, loc, st);
    b.setInsertionPointToStart(last.elseBlock());
    scf::YieldOp::create(b, loc, state);
  }
  state.assign(last.getResults().begin(), last.getResults().end());
  return success();
}

KernelBuilder::RowTile
KernelBuilder::findRowTile(function_ref<Value(Value)> loadEnd, Value count,
                           Value T, Value tileIndex, int64_t tileRows,
                           bool tail) {
  // end_e = min(T, max(0, ends[0..e])): each end is clamped to [previous
  // end, T]. Entries past the groups end at T (the tail) or at the last
  // group's end (no rows). The scan runs in i32 (ends are i32 metadata).
  Value lane = remu(threadId(), warpSize);
  Type i32Type = b.getI32Type();
  Type i1 = b.getI1Type();
  Value T32 = arith::IndexCastOp::create(b, loc, i32Type, T);
  Value tile32 = arith::IndexCastOp::create(b, loc, i32Type, tileIndex);
  Value chunks = arith::CeilDivUIOp::create(b, loc, add(count, 1),
                                            idx(warpSize));
  auto maxsi = [&](Value x, Value y) -> Value {
    return arith::MaxSIOp::create(b, loc, x, y);
  };
  auto addi = [&](Value x, Value y) -> Value {
    return arith::AddIOp::create(b, loc, x, y);
  };

  // Loop state: end of the previous chunk, tiles before it, found, and the
  // found tile's row range and group.
  Value zero = i32(0);
  Value no = arith::ConstantIntOp::create(b, loc, i1, 0);
  SmallVector<Value> init = {zero, zero, no, zero, zero, zero};
  auto loop = scf::ForOp::create(b, loc, idx(0), chunks, idx(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    ValueRange state = loop.getRegionIterArgs();
    // Chunks after the one holding the tile have nothing to add.
    auto ifOp = scf::IfOp::create(b, loc, loop.getResultTypes(), state[2],
                                  /*withElseRegion=*/true);
    scf::YieldOp::create(b, loc, ifOp.getResults());

    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, loc, state);

    b.setInsertionPointToStart(ifOp.elseBlock());
    Value carryEnd = state[0], carryTiles = state[1];
    Value entry = add(mul(loop.getInductionVar(), warpSize), lane);
    Value isGroup = lt(entry, count);
    Value loadAt = minu(entry, sub(count, idx(1)));
    Value raw = select(isGroup, loadEnd(loadAt), tail ? T32 : zero);
    // Ends and tile counts are >= 0: 0 is an identity of both scans.
    Value end = warpScan(maxsi(raw, carryEnd), maxsi, zero);
    end = arith::MinSIOp::create(b, loc, end, T32);
    auto [prev, hasPrev] = target.shuffleUp(b, loc, end, 1);
    Value start = select(hasPrev, prev, carryEnd);
    // ceil((end - start) / tileM); entries past the tail have none.
    Value tiles = arith::DivUIOp::create(
        b, loc, addi(arith::SubIOp::create(b, loc, end, start),
                     i32(tileRows - 1)),
        i32(tileRows));
    Value inclusive = addi(warpScan(tiles, addi, zero), carryTiles);
    // The owner is the first lane whose tiles end after the block's tile:
    // `inclusive` grows with the lane, so the lanes before it are those
    // whose tiles end at or before it.
    Value owner = countLanes(arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::sle, inclusive, tile32));
    Value found = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                        owner, i32(warpSize));
    Value ownerLane = arith::MinUIOp::create(b, loc, owner, i32(warpSize - 1));
    Value exclusive = arith::SubIOp::create(b, loc, inclusive, tiles);
    Value ownerStart = readLane(start, ownerLane);
    Value ownerEnd = readLane(end, ownerLane);
    Value ownerTilesBefore = readLane(exclusive, ownerLane);
    Value first = arith::AddIOp::create(
        b, loc, ownerStart,
        arith::MulIOp::create(
            b, loc, arith::SubIOp::create(b, loc, tile32, ownerTilesBefore),
            i32(tileRows)));
    Value ownerGroup = addi(
        arith::IndexCastOp::create(b, loc, i32Type,
                                   mul(loop.getInductionVar(), warpSize)),
        ownerLane);
    Value last = arith::MinSIOp::create(b, loc, ownerEnd,
                                        addi(first, i32(tileRows)));
    Value lastLane = i32(warpSize - 1);
    scf::YieldOp::create(b, loc,
                         ValueRange{readLane(end, lastLane),
                                    readLane(inclusive, lastLane), found, first,
                                    last, ownerGroup});
  }
  return {loop.getResult(2), toIndex(loop.getResult(3)),
          toIndex(loop.getResult(4)), toIndex(loop.getResult(5))};
}


std::pair<Value, Value> KernelBuilder::groupRows(Value offsets, Value group,
                                                 int64_t count, Value T) {
  Type i32Type = b.getI32Type();
  Value lane = remu(threadId(), warpSize);
  int64_t chunks = (count + warpSize - 1) / warpSize;
  auto loop = scf::ForOp::create(b, loc, idx(0), idx(chunks), idx(1),
                                 ValueRange{i32(0)});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value entry = add(mul(loop.getInductionVar(), warpSize), lane);
    Value before = lt(entry, group);
    Value loadAt = arith::MinUIOp::create(b, loc, entry, idx(count - 1));
    Value offset = memref::LoadOp::create(b, loc, offsets, loadAt);
    Value running = loop.getRegionIterArgs()[0];
    scf::YieldOp::create(
        b, loc,
        select(before, arith::MaxSIOp::create(b, loc, running, offset),
               running));
  }
  Value startMax = warpReduce(loop.getResult(0), [&](Value x, Value y) {
    return arith::MaxSIOp::create(b, loc, x, y).getResult();
  });
  Value own = memref::LoadOp::create(b, loc, offsets, group);
  Value T32 = arith::IndexCastOp::create(b, loc, i32Type, T);
  Value start32 = arith::MinSIOp::create(b, loc, startMax, T32);
  Value end32 = arith::MinSIOp::create(
      b, loc, arith::MaxSIOp::create(b, loc, own, start32), T32);
  return {toIndex(start32), toIndex(end32)};
}

void KernelBuilder::forEachRowChunk(
    int64_t rows, int64_t width, int64_t threads,
    function_ref<void(int64_t step, Value row, Value col)> fn) {
  Value tid = threadId();
  Value rowInStep = divu(tid, kChunk);
  Value colInBlock = mul(remu(tid, kChunk), kChunk);
  int64_t rowsPerStep = threads / kChunk;
  for (int64_t block = 0; block < width / 64; ++block)
    for (int64_t step = 0; step < rows / rowsPerStep; ++step)
      fn(step, add(rowInStep, step * rowsPerStep),
         add(colInBlock, block * 64));
}

void KernelBuilder::forEachRowGroupChunk(
    int64_t rows, int64_t width, int64_t threads, int64_t maxGroup,
    function_ref<void(int64_t i, Value row, Value col, int64_t groupRows)> fn) {
  int64_t chunks = rows * width / kChunk / threads;
  int64_t group = std::gcd(maxGroup, chunks);
  int64_t rowGroups = rows / group;
  Value tid = threadId();
  for (int64_t g = 0; g < chunks / group; ++g) {
    Value id = add(tid, g * threads);
    Value first = mul(remu(id, rowGroups), group);
    Value col = mul(divu(id, rowGroups), kChunk);
    for (int64_t r = 0; r < group; ++r)
      fn(g * group + r, add(first, r), col, r ? 0 : group);
  }
}

KernelBuilder::TilePipeline
KernelBuilder::chunkPipeline(Value numTiles, int64_t stages, int64_t chunks,
                             Type elem, ChunkEnumerator forEachChunk) {
  TilePipeline p;
  p.numTiles = numTiles;
  p.stages = stages;
  p.chunks = chunks;
  p.chunkType = VectorType::get({kChunk}, elem);
  p.issue = [this, forEachChunk](Value stage, Value tile) {
    forEachChunk(stage, tile, {}, [&](const StagedChunk &c) {
      (void)target.asyncCopy(b, loc, c.shared, c.dst, c.src, c.srcIndices,
                             kChunk, c.validElements);
    });
  };
  p.fetch = [this, forEachChunk, elem](Value tile, ValueRange ahead) {
    SmallVector<Value> loaded;
    // The destination (stage 0) is not used: store recomputes it.
    Type chunkType = VectorType::get({kChunk}, elem);
    forEachChunk(idx(0), tile, ahead, [&](const StagedChunk &c) {
      loaded.push_back(c.window
                           ? target.bufferLoad(b, loc, chunkType, c.window,
                                               c.windowOffset, c.tileOffset)
                           : loadChunk(c.src, c.srcIndices, c.validElements,
                                       c.partial, c.zeroFill));
    });
    return loaded;
  };
  p.store = [this, forEachChunk](Value stage, Value tile, ValueRange fetched) {
    // Windowed partial chunks are masked here, all under one uniform
    // branch where the tile may hold one.
    SmallVector<Value> loaded(fetched);
    SmallVector<size_t> partial;
    SmallVector<Value> valid;
    Value mayBePartial;
    size_t n = 0;
    forEachChunk(stage, tile, {}, [&](const StagedChunk &c) {
      if (c.window && c.partial) {
        partial.push_back(n);
        valid.push_back(c.validElements);
        mayBePartial = c.mayBePartial;
      }
      ++n;
    });
    if (!partial.empty()) {
      SmallVector<Type> types;
      for (size_t k : partial)
        types.push_back(loaded[k].getType());
      // Unlikely: only the tile that a context ends inside.
      auto ifOp = scf::IfOp::create(b, loc, types, unlikely(mayBePartial),
                                    /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      SmallVector<Value> masked;
      for (auto [k, v] : llvm::zip(partial, valid))
        masked.push_back(keepFirst(loaded[k], v));
      scf::YieldOp::create(b, loc, masked);
      b.setInsertionPointToStart(ifOp.elseBlock());
      SmallVector<Value> whole;
      for (size_t k : partial)
        whole.push_back(loaded[k]);
      scf::YieldOp::create(b, loc, whole);
      for (auto [k, v] : llvm::zip(partial, ifOp.getResults()))
        loaded[k] = v;
    }
    // The chunks fetch enumerated (the source side is dead code here), a
    // run of scattered rows with its first, stored in reverse: the first
    // store's wait, for the last load, covers the rest (vector loads
    // return in order), where in fetch's order the back end waited for
    // each store's own load (gfx950's paged forms: 3 waits a tile).
    std::vector<std::pair<size_t, StagedChunk>> runs;
    size_t i = 0;
    int64_t storedWithPrevious = 0;
    forEachChunk(stage, tile, {}, [&](const StagedChunk &c) {
      size_t first = i++;
      if (storedWithPrevious) {
        --storedWithPrevious;
        return;
      }
      storedWithPrevious = c.scatter.empty() ? 0 : c.scatterRows - 1;
      runs.push_back({first, c});
    });
    for (const auto &[first, c] : llvm::reverse(runs)) {
      Value chunk = loaded[first];
      // Into a byte view (chunkMajorElement), the values' bytes.
      auto store = [&](Value v, Value shared, ValueRange at, int64_t align) {
        auto type = cast<VectorType>(v.getType());
        Type memElem = cast<MemRefType>(shared.getType()).getElementType();
        if (memElem != type.getElementType())
          v = vector::BitCastOp::create(
              b, loc,
              VectorType::get(type.getNumElements() *
                                  type.getElementTypeBitWidth() /
                                  memElem.getIntOrFloatBitWidth(),
                              memElem),
              v);
        vector::StoreOp::create(b, loc, v, shared, at, false,
                                llvm::MaybeAlign(align));
      };
      if (c.scatter.empty()) {
        store(chunk, c.shared, c.dst, 16);
        continue;
      }
      int64_t rows = c.scatterRows;
      for (auto [e, at] : llvm::enumerate(c.scatter)) {
        Value shared = c.scatterViews.empty() ? c.shared : c.scatterViews[e];
        if (rows == 1 && shared == c.shared) {
          memref::StoreOp::create(
              b, loc, vector::ExtractOp::create(b, loc, chunk, e), shared, at);
          continue;
        }
        SmallVector<Value> column;
        for (int64_t r = 0; r < rows; ++r)
          column.push_back(
              vector::ExtractOp::create(b, loc, loaded[first + r], e));
        Type elem = cast<VectorType>(chunk.getType()).getElementType();
        auto type = VectorType::get({rows}, elem);
        store(vector::FromElementsOp::create(b, loc, type, column), shared, at,
              rows * elem.getIntOrFloatBitWidth() / 8);
      }
    }
  };
  return p;
}

Value KernelBuilder::bufferWindow(Value memref, Value first, Value elements,
                                  int64_t maxElements, Value fixedFirst) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  if (!target.hasBufferLoads() ||
      maxElements * bytes >= TargetInfo::kMaxBufferBytes ||
      !type.getLayout().isIdentity())
    return Value();
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  if (fixedFirst)
    base = add(base, mul(fixedFirst, bytes));
  Value address = add(base, mul(first, bytes));
  Type i64 = b.getI64Type();
  Value address64 = arith::IndexCastUIOp::create(b, loc, i64, address);
  Value pointer = LLVM::IntToPtrOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext(), /*global=*/1),
      address64);
  Value size = arith::IndexCastUIOp::create(b, loc, i64, mul(elements, bytes));
  return target.bufferResource(b, loc, pointer, size);
}

void KernelBuilder::readFromWindow(StagedChunk &chunk, Value window,
                                   Value element, Value valid,
                                   Value tileElement) {
  int64_t bytes =
      cast<MemRefType>(chunk.src.getType()).getElementTypeBitWidth() / 8;
  Value offset = toI32(mul(element, bytes));
  if (valid)
    offset = select(valid, offset,
                    arith::ConstantIntOp::create(b, loc, b.getI32Type(),
                                                 TargetInfo::kMaxBufferBytes));
  chunk.window = window;
  chunk.windowOffset = offset;
  chunk.tileOffset = toI32(mul(tileElement ? tileElement : idx(0), bytes));
}

Value KernelBuilder::loadChunk(Value src, ValueRange indices,
                               Value validElements, bool partial,
                               bool zeroFill) {
  Type elem = cast<MemRefType>(src.getType()).getElementType();
  auto chunkType = VectorType::get({kChunk}, elem);
  Value zeros =
      arith::ConstantOp::create(b, loc, chunkType, b.getZeroAttr(chunkType));
  // A chunk with no valid element reads src's first one: in bounds whenever
  // any chunk is loaded at all (a tile exists only over data).
  Value any = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                    validElements, idx(0));
  SmallVector<Value> at;
  for (Value i : indices)
    at.push_back(select(any, i, idx(0)));
  Value chunk = vector::LoadOp::create(b, loc, chunkType, src, at, false,
                                       llvm::MaybeAlign(16));
  if (!zeroFill)
    return chunk;
  if (!partial)
    return select(any, chunk, zeros);
  return keepFirst(chunk, validElements);
}

Value KernelBuilder::keepFirst(Value chunk, Value validElements) {
  auto chunkType = cast<VectorType>(chunk.getType());
  Value zeros =
      arith::ConstantOp::create(b, loc, chunkType, b.getZeroAttr(chunkType));
  // Element e is kept when e < validElements (vector.create_mask has no
  // lowering in the ROCDL conversion).
  auto laneType = VectorType::get({kChunk}, b.getI32Type());
  Value laneIds = arith::ConstantOp::create(
      b, loc, laneType,
      DenseElementsAttr::get(laneType,
                             ArrayRef<int32_t>({0, 1, 2, 3, 4, 5, 6, 7})));
  Value mask = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::slt, laneIds,
      vector::BroadcastOp::create(b, loc, laneType, toI32(validElements)));
  return select(mask, chunk, zeros);
}
