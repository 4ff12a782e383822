// Targets: host, NVIDIA (sm80, sm90) and AMD (gfx942, gfx950); anything else
// is unknown. A kernel of a given spec that has
// no GPU template is an error (the embedded default set skips it instead).
// RUN: not tessel-aot %s --targets=sm80 -o %t.tsb 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not tessel-aot %s --targets=host,gfx950 -o %t.tsb 2>&1 | FileCheck %s --check-prefix=GFX950
// RUN: not tessel-aot %s --targets=tpu -o %t.tsb 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tessel-aot %s --targets= -o %t.tsb 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: tessel-aot %s --targets=host -o %t.tsb | FileCheck %s --check-prefix=HOST

// SM80: error: 'tessel.expert_histogram' op has no GPU kernel template yet (GPU templates: tessel.grouped_matmul, tessel.grouped_matmul_wgrad, tessel.decode_attention, tessel.paged_attention, tessel.lse_merge, tessel.lse_merge_n, tessel.reshape_and_cache)
// GFX950: error: 'tessel.expert_histogram' op has no GPU kernel template yet (GPU templates: tessel.grouped_matmul, tessel.grouped_matmul_wgrad, tessel.decode_attention, tessel.paged_attention, tessel.lse_merge, tessel.lse_merge_n, tessel.reshape_and_cache)
// UNKNOWN: error: unknown target 'tpu'; known targets: host, sm80, sm90, gfx942, gfx950
// EMPTY: error: --targets is empty

// HOST: kernel                                   op                             target  dtype      bytes
// HOST-NEXT: histogram{{ +}}tessel.expert_histogram{{ +}}host{{ +}}i32
// HOST-NEXT: wrote 1 kernels for host to {{.*}}.tsb

func.func @histogram(%ids: memref<?x2xi32>, %counts: memref<4xi32>, %offsets: memref<4xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>) counts(%counts : memref<4xi32>) group_offsets(%offsets : memref<4xi32>)
  return
}
