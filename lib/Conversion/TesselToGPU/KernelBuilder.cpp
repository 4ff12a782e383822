//===- KernelBuilder.cpp - What every GPU kernel template builds with -----===//

#include "KernelBuilder.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include "llvm/Support/MathExtras.h"

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

void KernelBuilder::ifThen(Value cond, function_ref<void()> body) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  body();
}

Value KernelBuilder::warpScan(Value x,
                              function_ref<Value(Value, Value)> combine) {
  for (int64_t d = 1; d < warpSize; d *= 2) {
    auto up = gpu::ShuffleOp::create(b, loc, x, d, warpSize,
                                     gpu::ShuffleMode::UP);
    // Lanes below d get no value (valid = false) and keep theirs.
    x = select(up.getValid(), combine(x, up.getShuffleResult()), x);
  }
  return x;
}

Value KernelBuilder::warpReduce(Value x,
                                function_ref<Value(Value, Value)> combine,
                                int64_t width) {
  if (width <= 0)
    width = warpSize;
  for (int64_t d = 1; d < width; d *= 2) {
    auto other = gpu::ShuffleOp::create(b, loc, x, d, warpSize,
                                        gpu::ShuffleMode::XOR);
    x = combine(x, other.getShuffleResult());
  }
  return x;
}

Value KernelBuilder::broadcast(Value x, Value srcLane) {
  return gpu::ShuffleOp::create(b, loc, x, srcLane, i32(warpSize),
                                gpu::ShuffleMode::IDX)
      .getShuffleResult();
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

Value KernelBuilder::sharedView(Value bytes, int64_t offset,
                                ArrayRef<int64_t> shape, Type elem) {
  auto workgroup = gpu::AddressSpaceAttr::get(b.getContext(),
                                              gpu::AddressSpace::Workgroup);
  auto type =
      MemRefType::get(shape, elem, MemRefLayoutAttrInterface(), workgroup);
  return memref::ViewOp::create(b, loc, type, bytes, idx(offset), ValueRange{});
}

SmallVector<Value> KernelBuilder::swizzledIndices(ValueRange outer, Value row,
                                                  Value col, int64_t width) {
  // Rows of `width` elements are width/8 chunks; a 128-byte bank line holds
  // 8/(width/8) rows (or a row spans several lines). XOR the chunk with
  // (row / rowsPerLine) % min(chunks, 8) so that 8 consecutive rows at one
  // chunk fill 8 different 16-byte slots of a bank line. For rows of 8 or
  // more chunks only the low 3 bits of the chunk change, so a chunk stays in
  // its row (width is then a multiple of 64).
  int64_t chunks = width / kChunk;
  int64_t rowsPerLine = std::max<int64_t>(1, kChunk / chunks);
  Value swz = remu(divu(row, rowsPerLine), std::min<int64_t>(chunks, 8));
  Value chunk = arith::XOrIOp::create(b, loc, divu(col, kChunk), swz);
  SmallVector<Value> indices(outer);
  indices.push_back(row);
  indices.push_back(add(mul(chunk, kChunk), remu(col, kChunk)));
  return indices;
}
