// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx
// RUN: FileCheck %s --check-prefix=NOCALL < %t.ptx

// The PTX of paged decode (Llama-3-8B heads, both cache layouts, and the
// split-KV form): K/V tiles by 16-byte zero-filling cp.async from the block
// table's blocks in a 3-stage ring, Q, K and P fragments by ldmatrix.x4, V by
// ldmatrix.x4.trans (NHD, token-major tiles) or plain ldmatrix (shuffled:
// its tiles are already dim-major), bf16 mma.sync with fp32 accumulators,
// row max/sum by butterfly shuffles, exp2/log2 as single ex2/lg2.approx
// instructions (no libdevice calls), 16-byte loads of q and stores of out,
// and no local memory.

// CHECK-LABEL: .visible .entry decode_nhd(
// CHECK:       .maxntid 128, 1, 1
// CHECK-DAG:   cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK-DAG:   cp.async.wait_group 1;
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG:   shfl.sync.bfly.b32
// CHECK-DAG:   ex2.approx.ftz.f32
// CHECK-DAG:   lg2.approx.ftz.f32
// CHECK-DAG:   ld.global.v4.b32
// CHECK-DAG:   st.global.v4.b32

// CHECK-LABEL: .visible .entry decode_shuffled(
// CHECK-NOT:   ldmatrix.sync.aligned.m8n8.x4.trans
// CHECK:       .visible .entry decode_split(

// The split form stores f32 partials and their LSEs.
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG:   st.global.v4.b32
// CHECK-DAG:   lg2.approx.ftz.f32

// NOLOCAL-NOT: .local
// NOCALL-NOT:  call
func.func @decode_nhd(%q: memref<?x32x128xbf16>, %kc: memref<?x16x8x128xbf16>, %vc: memref<?x16x8x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %lse: memref<32x?xf32>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x16x8x128xbf16>) v_cache(%vc : memref<?x16x8x128xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) lse(%lse : memref<32x?xf32>) layout(nhd) scale(%scale)
  return
}
func.func @decode_shuffled(%q: memref<?x32x128xbf16>, %kc: memref<?x8x16x16x8xbf16>, %vc: memref<?x8x2x128x8xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x32x128xbf16>, %scale: f32) {
  tessel.decode_attention q(%q : memref<?x32x128xbf16>) k_cache(%kc : memref<?x8x16x16x8xbf16>) v_cache(%vc : memref<?x8x2x128x8xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x32x128xbf16>) layout(shuffled) scale(%scale)
  return
}
func.func @decode_split(%q: memref<?x64x128xbf16>, %kc: memref<?x16x4x128xbf16>, %vc: memref<?x16x4x128xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x?x64x128xf32>, %lse: memref<?x64x?xf32>, %scale: f32) {
  tessel.paged_attention q(%q : memref<?x64x128xbf16>) k_cache(%kc : memref<?x16x4x128xbf16>) v_cache(%vc : memref<?x16x4x128xbf16>) block_table(%bt : memref<?x?xi32>) context_lens(%sl : memref<?xi32>) out(%out : memref<?x?x64x128xf32>) lse(%lse : memref<?x64x?xf32>) layout(nhd) scale(%scale)
  return
}
