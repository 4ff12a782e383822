// RUN: tessel-opt %s -split-input-file -verify-diagnostics --tessel-host-entry

// expected-error@+1 {{kernel 'two_ops': the body must be exactly one tessel op and a return}}
func.func @two_ops(%a: memref<?x4xi32>, %c: memref<8xi32>, %o: memref<8xi32>) {
  tessel.expert_histogram topk_ids(%a : memref<?x4xi32>) counts(%c : memref<8xi32>) group_offsets(%o : memref<8xi32>)
  tessel.expert_histogram topk_ids(%a : memref<?x4xi32>) counts(%c : memref<8xi32>) group_offsets(%o : memref<8xi32>)
  return
}

// -----

// expected-error@+1 {{kernel 'not_tessel': the body must be one tessel op, got 'memref.copy'}}
func.func @not_tessel(%a: memref<8xi32>, %b: memref<8xi32>) {
  memref.copy %a, %b : memref<8xi32> to memref<8xi32>
  return
}

// -----

// expected-error@+1 {{kernel 'returns': kernels return nothing; outputs are arguments}}
func.func @returns(%a: memref<?x4xi32>, %c: memref<8xi32>, %o: memref<8xi32>, %x: f32) -> f32 {
  tessel.expert_histogram topk_ids(%a : memref<?x4xi32>) counts(%c : memref<8xi32>) group_offsets(%o : memref<8xi32>)
  return %x : f32
}

// -----

// expected-error@+1 {{kernel 'windowed': kernel ops take no index operands; 'tessel.paged_attention' has a window that a kernel cannot take}}
func.func @windowed(%q: memref<?x4x64xf32>, %kc: memref<?x16x1x64xf32>, %vc: memref<?x16x1x64xf32>, %bt: memref<?x?xi32>, %cl: memref<?xi32>, %o: memref<?x4x64xf32>, %l: memref<4x?xf32>, %s: index, %n: index, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x4x64xf32>) k_cache(%kc : memref<?x16x1x64xf32>) v_cache(%vc : memref<?x16x1x64xf32>) block_table(%bt : memref<?x?xi32>) context_lens(%cl : memref<?xi32>) out(%o : memref<?x4x64xf32>) lse(%l : memref<4x?xf32>) window(%s, %n) layout(nhd) scale(%scale)
  return
}

// -----

// expected-error@+1 {{kernel 'aliased': operand 'out' reuses argument #0; kernel operands must be distinct arguments}}
func.func @aliased(%oa: memref<?x4x64xf32>, %la: memref<4x?xf32>, %ob: memref<?x4x64xf32>, %lb: memref<4x?xf32>) {
  tessel.lse_merge a(%oa : memref<?x4x64xf32>, %la : memref<4x?xf32>) b(%ob : memref<?x4x64xf32>, %lb : memref<4x?xf32>) out(%oa : memref<?x4x64xf32>)
  return
}

// -----

// expected-error@+1 {{kernel 'unused': argument #3 is not used by the op}}
func.func @unused(%a: memref<?x4xi32>, %c: memref<8xi32>, %o: memref<8xi32>, %extra: memref<8xi32>) {
  tessel.expert_histogram topk_ids(%a : memref<?x4xi32>) counts(%c : memref<8xi32>) group_offsets(%o : memref<8xi32>)
  return
}

// -----

// expected-error@+1 {{kernel 'strided': argument 'counts' must have the identity layout}}
func.func @strided(%a: memref<?x4xi32>, %c: memref<8xi32, strided<[2]>>, %o: memref<8xi32>) {
  tessel.expert_histogram topk_ids(%a : memref<?x4xi32>) counts(%c : memref<8xi32, strided<[2]>>) group_offsets(%o : memref<8xi32>)
  return
}
