// Targets: host, NVIDIA (sm80, sm90, sm90a) and AMD (gfx942, gfx950); anything else
// is unknown. A kernel of a given spec that cannot be one GPU kernel is an
// error (the embedded default set skips it instead).
// RUN: not tessel-aot %s --targets=sm80 -o %t.tsb 2>&1 | FileCheck %s --check-prefix=SM80
// RUN: not tessel-aot %s --targets=host,gfx950 -o %t.tsb 2>&1 | FileCheck %s --check-prefix=GFX950
// RUN: not tessel-aot %s --targets=tpu -o %t.tsb 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not tessel-aot %s --targets= -o %t.tsb 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: tessel-aot %s --targets=host -o %t.tsb | FileCheck %s --check-prefix=HOST

// SM80: error: 'tessel.extend_attention' op is not one GPU kernel: on a GPU, extend is the new tokens' prefill_attention
// GFX950: error: 'tessel.extend_attention' op is not one GPU kernel: on a GPU, extend is the new tokens' prefill_attention
// UNKNOWN: error: unknown target 'tpu'; known targets: host, sm80, sm90, sm90a, gfx942, gfx950
// EMPTY: error: --targets is empty

// HOST: kernel                                   op                             target  dtype      bytes
// HOST-NEXT: histogram{{ +}}tessel.expert_histogram{{ +}}host{{ +}}i32
// HOST-NEXT: extend{{ +}}tessel.extend_attention{{ +}}host{{ +}}bf16
// HOST-NEXT: wrote 2 kernels for host to {{.*}}.tsb

func.func @histogram(%ids: memref<?x2xi32>, %counts: memref<4xi32>, %offsets: memref<4xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x2xi32>) counts(%counts : memref<4xi32>) group_offsets(%offsets : memref<4xi32>)
  return
}

func.func @extend(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %cu: memref<?xi32>, %cl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.extend_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) cu_seqlens(%cu : memref<?xi32>) context_lens(%cl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) layout(nhd) scale(%scale)
  return
}
