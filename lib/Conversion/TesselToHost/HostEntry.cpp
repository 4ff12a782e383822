//===- HostEntry.cpp - The runtime's entry into a host kernel -------------===//

#include "tessel/Conversion/Passes.h"

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELHOSTENTRY
#include "tessel/Conversion/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;

namespace {
struct TesselHostEntryPass
    : public tessel::impl::TesselHostEntryBase<TesselHostEntryPass> {
  void runOnOperation() override {}
};
} // namespace
