//===- KernelBuilder.cpp - What every GPU kernel template builds with -----===//

#include "KernelBuilder.h"

using namespace mlir;
using namespace mlir::tessel;

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
