//===- Passes.td - Tessel dialect passes -------------------*- tablegen -*-===//
#ifndef TESSEL_DIALECT_TESSEL_TRANSFORMS_PASSES_TD
#define TESSEL_DIALECT_TESSEL_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TesselDecomposePhases : Pass<"tessel-decompose-phases", "func::FuncOp"> {
  let summary = "Decompose extend and long decode into chunks merged by LSE";
  let description = [{
    Rewrites the serving phases whose work is split in practice:

    * `tessel.extend_attention` becomes causal attention of the new tokens
      over themselves (`tessel.prefill_attention`), attention over the cached
      context in chunks of `chunk-tokens` tokens (`tessel.paged_attention`
      with a window, in an `scf.for` over the chunks the longest context
      needs) and an in-place `tessel.lse_merge` per chunk, the last one
      writing the op's own outputs.
    * `tessel.decode_attention` and `tessel.mla_decode` become split-KV:
      one windowed partial per `split-kv-tokens` tokens of the longest
      context, written into fp32 scratch `[P, B, H, D]` and merged by
      `tessel.lse_merge_n`. The split count comes from the block table
      width, so a decode whose table fits one split still goes through one
      partial and the merge (an fp32 `[1, B, H, D]` round trip); a
      `split-kv-tokens` of 0 leaves decode alone.

    Post-condition: no `tessel.extend_attention` remains; with
    `split-kv-tokens > 0` no `tessel.decode_attention` or un-windowed
    `tessel.mla_decode` remains. Scratch buffers are `memref.alloc`ed and
    freed in the function.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
  let options = [
    Option<"chunkTokens", "chunk-tokens", "int64_t", /*default=*/"32768",
           "Cached-context tokens per extend chunk (the per-iteration budget)">,
    Option<"splitKvTokens", "split-kv-tokens", "int64_t", /*default=*/"16384",
           "Context tokens per split-KV partial of decode (0: no split)">
  ];
}

#endif // TESSEL_DIALECT_TESSEL_TRANSFORMS_PASSES_TD
