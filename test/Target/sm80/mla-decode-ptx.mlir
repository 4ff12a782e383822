// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// The PTX of absorbed MLA decode (DeepSeek-V3, split form): 576-wide cache
// rows by 16-byte zero-filling cp.async, Q/K/P fragments by ldmatrix.x4, the
// values (the rows' first 512 columns, token-major) by ldmatrix.x4.trans,
// bf16 mma.sync, the warps' row maxima exchanged through shared memory
// between barriers, exp2/lg2 as single instructions, no calls or local
// memory.

// CHECK-LABEL: .visible .entry mla_split(
// CHECK:       .maxntid 128, 1, 1
// CHECK-DAG:   cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG:   bar.sync 0;
// CHECK-DAG:   ex2.approx.ftz.f32
// CHECK-DAG:   lg2.approx.ftz.f32

// NOLOCAL-NOT: .local
// NOLOCAL-NOT: call
func.func @mla_split(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x128x512xf32>, %lse: memref<?x128x?xf32>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x?x128x512xf32>) lse(%lse : memref<?x128x?xf32>) scale(%scale)
  return
}
