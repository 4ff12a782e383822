// AMD kernels in the bundle: gfx942 and gfx950 records each hold their own
// hsaco (a gfx950 cannot run gfx942 code objects), built without ROCm.
// RUN: tessel-aot %s --targets=gfx942,gfx950,host -o %t.tsb | FileCheck %s --check-prefix=SPEC
// RUN: tessel-aot --targets=gfx942,gfx950 -o %t-default.tsb 2>&1 | FileCheck %s --check-prefix=DEFAULT

// SPEC:      kernel                                   op                             target  dtype      bytes
// SPEC-NEXT: moe_gate{{ +}}tessel.grouped_matmul{{ +}}gfx942{{ +}}bf16
// SPEC-NEXT: moe_gate{{ +}}tessel.grouped_matmul{{ +}}gfx950{{ +}}bf16
// SPEC-NEXT: moe_gate{{ +}}tessel.grouped_matmul{{ +}}host{{ +}}bf16
// SPEC-NEXT: wrote 3 kernels for gfx942,gfx950,host to {{.*}}.tsb

// The default set: every grouped matmul, LSE merge, reshape_and_cache and
// MoE glue kernel for both chips; kernels that are not one GPU kernel are
// skipped with a note per chip.
// DEFAULT-DAG: tessel-aot: note: no gfx942 kernel for 'llama3_8b_extend': 'tessel.extend_attention' op is not one GPU kernel
// DEFAULT-DAG: tessel-aot: note: no gfx950 kernel for 'llama3_8b_extend': 'tessel.extend_attention' op is not one GPU kernel
// DEFAULT-DAG: deepseek_v3_mla_prefill{{ +}}tessel.prefill_attention{{ +}}gfx942
// DEFAULT-DAG: llama3_8b_prefill_lse{{ +}}tessel.prefill_attention{{ +}}gfx950
// DEFAULT-DAG: moe_ref_gate_up{{ +}}tessel.grouped_matmul{{ +}}gfx942
// DEFAULT-DAG: moe_ref_down_wgrad{{ +}}tessel.grouped_matmul_wgrad{{ +}}gfx942
// DEFAULT-DAG: deepseek_v3_moe_gate_up_wgrad{{ +}}tessel.grouped_matmul_wgrad{{ +}}gfx942
// DEFAULT-DAG: moe_ref_gate_up{{ +}}tessel.grouped_matmul{{ +}}gfx950
// DEFAULT-DAG: deepseek_v3_moe_gate_up_ptrs{{ +}}tessel.grouped_matmul{{ +}}gfx942
// DEFAULT-DAG: deepseek_v3_moe_gate_up_dgrad{{ +}}tessel.grouped_matmul{{ +}}gfx950
// DEFAULT-DAG: llama3_8b_decode_shuffled{{ +}}tessel.decode_attention{{ +}}gfx942
// DEFAULT-DAG: qwen3_235b_decode_split{{ +}}tessel.paged_attention{{ +}}gfx950
// The LSE merges and reshape_and_cache (both layouts) too.
// DEFAULT-DAG: llama3_8b_reshape_and_cache{{ +}}tessel.reshape_and_cache{{ +}}gfx942
// DEFAULT-DAG: llama3_8b_reshape_and_cache_shuffled{{ +}}tessel.reshape_and_cache{{ +}}gfx950
// DEFAULT-DAG: llama3_8b_extend_merge_acc{{ +}}tessel.lse_merge{{ +}}gfx942
// DEFAULT-DAG: llama3_8b_lse_merge_n{{ +}}tessel.lse_merge_n{{ +}}gfx950
// DEFAULT-DAG: qwen3_235b_reshape_and_cache_shuffled{{ +}}tessel.reshape_and_cache{{ +}}gfx942
// DEFAULT-DAG: qwen3_235b_extend_merge_out{{ +}}tessel.lse_merge{{ +}}gfx950
// DEFAULT-DAG: qwen3_235b_lse_merge_n{{ +}}tessel.lse_merge_n{{ +}}gfx942
// The MoE routing glue of both MoE shapes, for both chips.
// DEFAULT-DAG: moe_ref_histogram{{ +}}tessel.expert_histogram{{ +}}gfx942
// DEFAULT-DAG: moe_ref_sort{{ +}}tessel.expert_sort{{ +}}gfx950
// DEFAULT-DAG: moe_ref_permute{{ +}}tessel.moe_permute{{ +}}gfx942
// DEFAULT-DAG: moe_ref_unpermute{{ +}}tessel.moe_unpermute{{ +}}gfx950
// DEFAULT-DAG: deepseek_v3_moe_histogram{{ +}}tessel.expert_histogram{{ +}}gfx950
// DEFAULT-DAG: deepseek_v3_moe_sort{{ +}}tessel.expert_sort{{ +}}gfx942
// DEFAULT-DAG: deepseek_v3_moe_permute{{ +}}tessel.moe_permute{{ +}}gfx950
// DEFAULT-DAG: deepseek_v3_moe_unpermute{{ +}}tessel.moe_unpermute{{ +}}gfx942
// DEFAULT:     wrote 124 kernels for gfx942,gfx950 to {{.*}}.tsb

func.func @moe_gate(%a: memref<?x2048xbf16>, %b: memref<128x1024x2048xbf16>,
                    %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}
