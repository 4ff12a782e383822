//===- Pipelines.h - Tessel compilation pipelines ---------------*- C++ -*-===//
//
// The pipelines from tessel ops to a target's LLVM dialect, as C++ functions
// with options. tessel-opt registers them; tessel-aot (and later the Python
// package) call the same functions.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_PIPELINES_PIPELINES_H
#define TESSEL_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::tessel {

struct HostPipelineOptions : public PassPipelineOptions<HostPipelineOptions> {
  Option<bool> decompose{*this, "decompose",
                         llvm::cl::desc("Run tessel-decompose-phases (chunked "
                                        "extend, split-KV decode)"),
                         llvm::cl::init(true)};
  Option<int64_t> chunkTokens{
      *this, "chunk-tokens",
      llvm::cl::desc("Cached-context tokens per extend chunk"),
      llvm::cl::init(32768)};
  Option<int64_t> splitKvTokens{
      *this, "split-kv-tokens",
      llvm::cl::desc("Context tokens per split-KV decode partial (0: none)"),
      llvm::cl::init(16384)};
};

/// Kernel functions of tessel ops -> LLVM dialect for the host: each kernel
/// gets a `void (void **params)` entry and reference loops.
void buildHostPipeline(OpPassManager &pm, const HostPipelineOptions &options);

/// Registers `tessel-host-pipeline` with tessel-opt.
void registerTesselPipelines();

} // namespace mlir::tessel

#endif // TESSEL_PIPELINES_PIPELINES_H
