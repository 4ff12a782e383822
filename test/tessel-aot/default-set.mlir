// With no input, tessel-aot compiles the embedded default kernel set.
// RUN: tessel-aot --targets=host -o %t.tsb | FileCheck %s

// CHECK: llama3_8b_prefill{{ +}}tessel.prefill_attention{{ +}}host{{ +}}bf16
// CHECK: qwen3_235b_decode{{ +}}tessel.decode_attention
// CHECK: qwen3_235b_decode_split{{ +}}tessel.paged_attention
// CHECK: qwen3_235b_unified{{ +}}tessel.paged_attention
// CHECK: deepseek_v3_mla_decode{{ +}}tessel.mla_decode
// CHECK: deepseek_v3_moe_gate_up_ptrs{{ +}}tessel.grouped_matmul
// CHECK: moe_ref_down_wgrad{{ +}}tessel.grouped_matmul_wgrad
// CHECK: wrote 65 kernels for host to {{.*}}.tsb
