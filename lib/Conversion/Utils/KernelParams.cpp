//===- KernelParams.cpp - Memrefs from kernel parameters ------------------===//

#include "tessel/Conversion/Utils/KernelParams.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::tessel;

Value mlir::tessel::buildArgMemRef(OpBuilder &b, Location loc,
                                   const KernelArg &arg, Value data,
                                   ArrayRef<Value> symbols) {
  Type i64 = b.getI64Type();
  auto constant = [&](int64_t v) -> Value {
    return LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(v));
  };
  int64_t rank = cast<MemRefType>(arg.type).getRank();
  SmallVector<Value> sizes;
  for (const KernelDim &d : arg.dims) {
    if (d.symbol < 0) {
      sizes.push_back(constant(d.constant));
      continue;
    }
    Value v = symbols[d.symbol];
    if (d.mul != 1)
      v = LLVM::MulOp::create(b, loc, v, constant(d.mul));
    if (d.add != 0)
      v = LLVM::AddOp::create(b, loc, v, constant(d.add));
    sizes.push_back(v);
  }
  SmallVector<Value> strides(rank);
  strides[rank - 1] = constant(1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = LLVM::MulOp::create(b, loc, strides[d + 1], sizes[d + 1]);

  Type ptrType = data.getType();
  auto arrayType = LLVM::LLVMArrayType::get(i64, rank);
  auto structType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), {ptrType, ptrType, i64, arrayType, arrayType});
  Value desc = LLVM::UndefOp::create(b, loc, structType);
  desc = LLVM::InsertValueOp::create(b, loc, desc, data, ArrayRef<int64_t>{0});
  desc = LLVM::InsertValueOp::create(b, loc, desc, data, ArrayRef<int64_t>{1});
  desc = LLVM::InsertValueOp::create(b, loc, desc, constant(0),
                                     ArrayRef<int64_t>{2});
  for (int64_t d = 0; d < rank; ++d) {
    desc = LLVM::InsertValueOp::create(b, loc, desc, sizes[d],
                                       ArrayRef<int64_t>{3, d});
    desc = LLVM::InsertValueOp::create(b, loc, desc, strides[d],
                                       ArrayRef<int64_t>{4, d});
  }
  return UnrealizedConversionCastOp::create(b, loc, arg.type, desc)
      .getResult(0);
}

Attribute mlir::tessel::buildTensorMapsAttr(Builder &b,
                                            ArrayRef<TensorMapSpec> maps) {
  SmallVector<Attribute> out;
  for (const TensorMapSpec &m : maps) {
    SmallVector<int64_t> v = {m.arg, m.swizzle,
                              static_cast<int64_t>(m.dims.size())};
    for (auto [first, last] : m.dims)
      v.append({first, last});
    v.append(m.box.begin(), m.box.end());
    out.push_back(b.getDenseI64ArrayAttr(v));
  }
  return b.getArrayAttr(out);
}

FailureOr<SmallVector<TensorMapSpec>>
mlir::tessel::readTensorMaps(Operation *kernel) {
  SmallVector<TensorMapSpec> maps;
  auto list = kernel->getAttrOfType<ArrayAttr>(kTensorMapsAttrName);
  if (!list)
    return maps;
  for (Attribute attr : list) {
    auto values = dyn_cast<DenseI64ArrayAttr>(attr);
    ArrayRef<int64_t> v = values ? values.asArrayRef() : ArrayRef<int64_t>();
    if (v.size() < 3 || v.size() != 3 + 3 * static_cast<size_t>(v[2]))
      return kernel->emitError() << "malformed " << kTensorMapsAttrName;
    TensorMapSpec m;
    m.arg = v[0];
    m.swizzle = v[1];
    int64_t rank = v[2];
    for (int64_t d = 0; d < rank; ++d)
      m.dims.push_back({static_cast<unsigned>(v[3 + 2 * d]),
                        static_cast<unsigned>(v[4 + 2 * d])});
    m.box.assign(v.begin() + 3 + 2 * rank, v.end());
    maps.push_back(std::move(m));
  }
  return maps;
}
