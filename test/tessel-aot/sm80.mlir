// NVIDIA kernels in the bundle: sm80 records hold the PTX (JIT on any sm80+
// GPU), sm90 records the sm_90 cubin ptxas builds from the same PTX.
// RUN: tessel-aot %s --targets=sm80,host -o %t.tsb | FileCheck %s --check-prefix=SM80
// RUN: tessel-aot --targets=sm80 -o %t-default.tsb 2>&1 | FileCheck %s --check-prefix=DEFAULT

// SM80:      kernel                                   op                             target  dtype      bytes
// SM80-NEXT: moe_gate{{ +}}tessel.grouped_matmul{{ +}}sm80{{ +}}bf16
// SM80-NEXT: moe_gate{{ +}}tessel.grouped_matmul{{ +}}host{{ +}}bf16
// SM80-NEXT: wrote 2 kernels for sm80,host to {{.*}}.tsb

// The default set: kernels that are not one GPU kernel are skipped, each with a
// note saying why.
// DEFAULT-DAG: tessel-aot: note: no sm80/sm90 kernel for 'llama3_8b_extend': 'tessel.extend_attention' op is not one GPU kernel
// DEFAULT-DAG: llama3_8b_prefill{{ +}}tessel.prefill_attention{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_mla_prefill{{ +}}tessel.prefill_attention{{ +}}sm80
// DEFAULT-DAG: llama3_8b_extend_context{{ +}}tessel.paged_attention{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_mla_extend_context{{ +}}tessel.paged_attention{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_mla_decode_split{{ +}}tessel.mla_decode{{ +}}sm80
// Every grouped matmul has one: stacked or pointer-table b, with or
// without trans_b.
// DEFAULT-DAG: moe_ref_gate_up{{ +}}tessel.grouped_matmul{{ +}}sm80
// DEFAULT-DAG: moe_ref_down_wgrad{{ +}}tessel.grouped_matmul_wgrad{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_moe_gate_up_wgrad{{ +}}tessel.grouped_matmul_wgrad{{ +}}sm80
// DEFAULT-DAG: moe_ref_gate_up_ptrs{{ +}}tessel.grouped_matmul{{ +}}sm80
// DEFAULT-DAG: moe_ref_down_dgrad{{ +}}tessel.grouped_matmul{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_moe_down{{ +}}tessel.grouped_matmul{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_moe_gate_up_ptrs{{ +}}tessel.grouped_matmul{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_moe_gate_up_dgrad{{ +}}tessel.grouped_matmul{{ +}}sm80
// DEFAULT-DAG: moe_ref_gate_up_dgrad{{ +}}tessel.grouped_matmul{{ +}}sm80
// Decode: direct and split-KV partials, both cache layouts.
// DEFAULT-DAG: llama3_8b_decode{{ +}}tessel.decode_attention{{ +}}sm80
// DEFAULT-DAG: llama3_8b_decode_shuffled{{ +}}tessel.decode_attention{{ +}}sm80
// DEFAULT-DAG: qwen3_235b_decode_split{{ +}}tessel.paged_attention{{ +}}sm80
// The LSE merges and reshape_and_cache (both layouts) have one too.
// DEFAULT-DAG: llama3_8b_reshape_and_cache{{ +}}tessel.reshape_and_cache{{ +}}sm80
// DEFAULT-DAG: llama3_8b_reshape_and_cache_shuffled{{ +}}tessel.reshape_and_cache{{ +}}sm80
// DEFAULT-DAG: llama3_8b_extend_merge_acc{{ +}}tessel.lse_merge{{ +}}sm80
// DEFAULT-DAG: llama3_8b_lse_merge_n{{ +}}tessel.lse_merge_n{{ +}}sm80
// DEFAULT-DAG: qwen3_235b_reshape_and_cache{{ +}}tessel.reshape_and_cache{{ +}}sm80
// DEFAULT-DAG: qwen3_235b_reshape_and_cache_shuffled{{ +}}tessel.reshape_and_cache{{ +}}sm80
// DEFAULT-DAG: qwen3_235b_extend_merge_out{{ +}}tessel.lse_merge{{ +}}sm80
// DEFAULT-DAG: qwen3_235b_lse_merge_n{{ +}}tessel.lse_merge_n{{ +}}sm80
// The MoE routing glue: histogram, sort, permute and unpermute of both
// MoE shapes.
// DEFAULT-DAG: moe_ref_histogram{{ +}}tessel.expert_histogram{{ +}}sm80
// DEFAULT-DAG: moe_ref_sort{{ +}}tessel.expert_sort{{ +}}sm80
// DEFAULT-DAG: moe_ref_permute{{ +}}tessel.moe_permute{{ +}}sm80
// DEFAULT-DAG: moe_ref_unpermute{{ +}}tessel.moe_unpermute{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_moe_histogram{{ +}}tessel.expert_histogram{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_moe_sort{{ +}}tessel.expert_sort{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_moe_permute{{ +}}tessel.moe_permute{{ +}}sm80
// DEFAULT-DAG: deepseek_v3_moe_unpermute{{ +}}tessel.moe_unpermute{{ +}}sm80
// DEFAULT:     wrote 62 kernels for sm80 to {{.*}}.tsb

func.func @moe_gate(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}
