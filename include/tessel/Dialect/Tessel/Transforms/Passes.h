//===- Passes.h - Tessel dialect passes -------------------------*- C++ -*-===//
#ifndef TESSEL_DIALECT_TESSEL_TRANSFORMS_PASSES_H
#define TESSEL_DIALECT_TESSEL_TRANSFORMS_PASSES_H

#include "tessel/Dialect/Tessel/IR/TesselOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tessel {

#define GEN_PASS_DECL
#include "tessel/Dialect/Tessel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "tessel/Dialect/Tessel/Transforms/Passes.h.inc"

} // namespace mlir::tessel

#endif // TESSEL_DIALECT_TESSEL_TRANSFORMS_PASSES_H
