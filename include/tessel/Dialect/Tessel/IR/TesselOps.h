//===- TesselOps.h - Tessel operations --------------------------*- C++ -*-===//
#ifndef TESSEL_DIALECT_TESSEL_IR_TESSELOPS_H
#define TESSEL_DIALECT_TESSEL_IR_TESSELOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tessel/Dialect/Tessel/IR/TesselDialect.h"
#include "tessel/Dialect/Tessel/IR/TesselEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tessel/Dialect/Tessel/IR/TesselAttrs.h.inc"

#define GET_OP_CLASSES
#include "tessel/Dialect/Tessel/IR/TesselOps.h.inc"

namespace mlir::tessel {

/// Elements per 16-byte chunk of the shuffled KV layout: x = 16 / sizeof(elem).
int64_t getShuffleWidth(Type elementType);

/// Where a (verified, hence static) K cache of `layout` keeps its block size
/// and KV head count: the one place that knows both layouts' dim order.
int64_t getCacheBlockSize(MemRefType kCache, KVLayout layout);
int64_t getCacheKVHeads(MemRefType kCache, KVLayout layout);

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_TESSEL_IR_TESSELOPS_H
