// REQUIRES: ptxas
// RUN: tessel-opt %s --tessel-nvvm-pipeline=ptxas-verbose=1 \
// RUN:   -mlir-print-op-on-diagnostic=false > %t.log 2>&1
// RUN: FileCheck %s < %t.log
// RUN: FileCheck %s --check-prefix=NOSPILL < %t.log

// ptxas (sm_90) builds the default set's prefill configs, head dim 128
// and MLA's 192/128, without spilling (the modules compile in any order).
// (Head dim 256, outside the default set, spills 12 bytes.)

// CHECK-DAG:   Compiling entry function 'prefill_d128' for 'sm_90'
// CHECK-DAG:   Compiling entry function 'prefill_mla' for 'sm_90'
// NOSPILL-NOT: {{[1-9][0-9]* bytes (stack frame|spill)}}
func.func @prefill_d128(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>) scale(%scale) {causal}
  return
}
func.func @prefill_mla(%q: memref<?x128x192xbf16>, %k: memref<?x128x192xbf16>, %v: memref<?x128x128xbf16>, %cu: memref<?xi32>, %out: memref<?x128x128xbf16>, %lse: memref<128x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x128x192xbf16>) k(%k : memref<?x128x192xbf16>) v(%v : memref<?x128x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x128x128xbf16>) lse(%lse : memref<128x?xf32>) scale(%scale) {causal}
  return
}
