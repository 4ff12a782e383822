// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// The wgrad (ragged K) stays on the tensor-core path: both operands are
// staged as they lie (rows of a and b, 16-byte cp.async), A^T fragments come
// from ldmatrix .trans like the dgrad's B, fp32 results are stored as
// pairs. Each block reads its group's offsets itself (grid over groups and
// output tiles), reducing the preceding offsets with shuffles.

// CHECK-LABEL: .visible .entry wgrad_down(
// CHECK:       .maxntid 128, 1, 1
// CHECK-DAG:   mov.u32 {{%r[0-9]+}}, %ctaid.z;
// CHECK-DAG:   shfl.sync.bfly.b32
// CHECK-DAG:   cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-DAG:   st.global.v2.b32

// NOLOCAL-NOT: .local
func.func @wgrad_down(%a: memref<?x2048xbf16>, %b: memref<?x512xbf16>,
                      %g: memref<128xi32>, %c: memref<128x2048x512xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x2048xbf16>)
      b(%b : memref<?x512xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x2048x512xf32>)
  return
}
