//===- tessel-opt.cpp - The Tessel optimizer driver -----------------------===//
//
// mlir-opt with the tessel dialect, its passes and pipelines: the tool the
// lit tests drive one pass at a time.
//
//===----------------------------------------------------------------------===//

#include "tessel/Conversion/Passes.h"
#include "tessel/Dialect/Tessel/IR/TesselOps.h"
#include "tessel/Dialect/Tessel/Transforms/Passes.h"
#include "tessel/Pipelines/Pipelines.h"
#include "tessel/Target/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllPasses();
  registry.insert<mlir::tessel::TesselDialect>();
  mlir::tessel::registerNVVMPipelineDependencies(registry);
  mlir::tessel::registerROCDLPipelineDependencies(registry);
  mlir::tessel::registerTesselPasses();
  mlir::tessel::registerTesselConversionPasses();
  mlir::tessel::registerTesselTargetPasses();
  mlir::tessel::registerTesselPipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Tessel optimizer driver\n", registry));
}
