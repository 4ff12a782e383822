// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// The PTX of causal varlen prefill (Llama-3-8B heads): the request tiles
// found by shuffle scans over cu_seqlens, K/V tiles by 16-byte zero-filling
// cp.async, Q and K fragments by ldmatrix.x4, V by ldmatrix.x4.trans, bf16
// mma.sync with fp32 accumulators (P fed to P.V from the S accumulators:
// no shared-memory stores inside the key loop besides the copies), exp2/lg2
// as single instructions, no calls, no local memory.

// CHECK-LABEL: .visible .entry prefill(
// CHECK:       .maxntid 128, 1, 1
// CHECK-DAG:   shfl.sync.up.b32
// CHECK-DAG:   cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG:   ex2.approx.ftz.f32
// CHECK-DAG:   lg2.approx.ftz.f32
// CHECK-DAG:   ld.global.v4.b32

// NOLOCAL-NOT: .local
// NOLOCAL-NOT: call
func.func @prefill(%q: memref<?x32x128xbf16>, %k: memref<?x8x128xbf16>, %v: memref<?x8x128xbf16>, %cu: memref<?xi32>, %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.prefill_attention q(%q : memref<?x32x128xbf16>) k(%k : memref<?x8x128xbf16>) v(%v : memref<?x8x128xbf16>) cu_seqlens(%cu : memref<?xi32>) out(%out : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>) scale(%scale) {causal}
  return
}
