// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// The MoE dgrad (no trans_b) keeps the tensor-core path: 16-byte cp.async
// of b's [K, N] rows, A fragments by ldmatrix, B fragments by ldmatrix
// .trans, bf16 mma.sync; from a pointer table, each block first reads its
// group's 64-bit address. No local memory.

// CHECK-LABEL: .visible .entry dgrad_down(
// CHECK-DAG:   cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-LABEL: .visible .entry table_dgrad(
// The table entry: index * 8 bytes into the table.
// CHECK:       shl.b64 [[OFF:%rd[0-9]+]], [[GROUP:%rd[0-9]+]], 3;
// CHECK:       add.s64 [[ENTRY:%rd[0-9]+]], {{%rd[0-9]+}}, [[OFF]];
// CHECK:       ld.global.{{.*}}[[[ENTRY]]];
// CHECK-DAG:   cp.async.cg.shared.global [{{.*}}], [{{.*}}], 16, {{.*}};
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// CHECK-LABEL: .visible .entry table_trans_b(
// CHECK-DAG:   ld.global.{{.*}}
// CHECK-DAG:   ldmatrix.sync.aligned.m8n8.x4.shared.b16
// CHECK-DAG:   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32

// NOLOCAL-NOT: .local

// Dgrad of down (b [E, K, N] = [128, 2048, 512]).
func.func @dgrad_down(%a: memref<?x2048xbf16>, %b: memref<128x2048x512xbf16>,
                      %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x2048x512xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x512xbf16>)
  return
}
// Dgrad of gate/up from a table of [K, N] = [1024, 2048] matrices.
func.func @table_dgrad(%a: memref<?x1024xbf16>, %b: memref<128xi64>,
                       %g: memref<128xi32>, %c: memref<?x2048xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x1024xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x2048xbf16>)
      {b_shape = array<i64: 1024, 2048>}
  return
}
// Gate/up forward from a table of [N, K] matrices.
func.func @table_trans_b(%a: memref<?x2048xbf16>, %b: memref<128xi64>,
                         %g: memref<128xi32>, %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128xi64>)
      group_offsets(%g : memref<128xi32>) c(%c : memref<?x1024xbf16>)
      {trans_b, b_shape = array<i64: 1024, 2048>}
  return
}
