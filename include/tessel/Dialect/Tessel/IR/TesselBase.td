//===- TesselBase.td - Tessel dialect definition -----------*- tablegen -*-===//
//
// The tessel dialect: the semantic ops of LLM serving attention and MoE
// training, on buffers (memrefs) in destination-passing style.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_BASE_TD
#define TESSEL_BASE_TD

include "mlir/IR/OpBase.td"

def Tessel_Dialect : Dialect {
  let name = "tessel";
  let summary = "Attention per serving phase, LSE merges, ragged grouped matmuls and MoE glue";
  let description = [{
    The tessel dialect models, as one op each, the kernels an LLM serving
    engine or an MoE training step needs: attention in its three serving
    phases (prefill, extend, decode) for MHA/GQA and MLA, the log-sum-exp merge
    that joins partial attention results, writing new tokens into a paged KV
    cache, ragged grouped matmuls, and the token routing glue of MoE layers.

    Ops work on memrefs in destination-passing style: outputs are operands the
    op writes. Token-major layouts are used throughout (`[tokens, heads,
    head_dim]`); log-sum-exps are natural-log fp32 `[heads, tokens]`. Ragged
    batches are described by device-resident int32 metadata (`cu_seqlens`,
    `seq_lens`, `group_offsets`). A function whose body is one tessel op is a
    kernel: `tessel-aot` compiles it for each target and writes a bundle.

    Paged KV caches come in two layouts (`layout(nhd)` / `layout(shuffled)`):

    * `nhd`: K and V are each `[num_blocks, block_size, num_kv_heads,
      head_dim]`;
    * `shuffled`, the CDNA pre-shuffled layout, with `x = 16 / sizeof(elem)`:
      K is `[num_blocks, num_kv_heads, head_dim / x, block_size, x]` and V is
      `[num_blocks, num_kv_heads, block_size / x, head_dim, x]`, so that one
      16-byte load per lane lands in the MFMA operand layout and decode reads
      it with no conversion.

    Token `j` of request `b` lives in block `block_table[b, j / block_size]`
    at offset `j % block_size`.
  }];
  let cppNamespace = "::mlir::tessel";
  let useDefaultAttributePrinterParser = 1;
}

#endif // TESSEL_BASE_TD
