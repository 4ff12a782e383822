//===- DecomposePhases.cpp - Chunked extend and split-KV decode -----------===//

#include "tessel/Dialect/Tessel/Transforms/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELDECOMPOSEPHASES
#include "tessel/Dialect/Tessel/Transforms/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;

namespace {
struct DecomposePhasesPass
    : public tessel::impl::TesselDecomposePhasesBase<DecomposePhasesPass> {
  using Base::Base;
  void runOnOperation() override {}
};
} // namespace
