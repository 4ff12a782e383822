// RUN: tessel-opt %s --tessel-nvvm-pipeline=cubin-arch= \
// RUN:   | %python %tessel_src_root/scripts/gpu-objects.py --print-asm > %t.ptx
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=NOLOCAL < %t.ptx

// The MoE routing glue in PTX. The histogram: one block of 1024 threads,
// ids read 16 bytes at a time (four loads in flight), counted with
// shared-memory atomics, scanned with shuffles, counts and ends stored.
// CHECK-LABEL: .visible .entry histogram(
// CHECK:       .maxntid 1024, 1, 1
// CHECK:       bar.sync 0;
// CHECK-COUNT-4: ld.global.v4.b32
// CHECK:       atom.shared.add.u32
// CHECK:       bar.sync 0;
// CHECK:       shfl.sync.up.b32
// CHECK-DAG:   st.global.b32
// CHECK-DAG:   st.global.b32
// CHECK:       ret;

// The sort: per-warp counts with shared atomics, the ends by a max-scan,
// then 9 ballots a step (E = 256) match the lanes of one expert, the
// group's first lane adds the group's size to the warp's counter and gets
// the old value back (atom, not red), a shuffle hands it out; positions and
// rows are 4-byte global stores.
// CHECK-LABEL: .visible .entry sort(
// CHECK:       .maxntid 1024, 1, 1
// CHECK:       atom.shared.add.u32
// CHECK:       shfl.sync.up.b32
// CHECK-COUNT-9: vote.sync.ballot.b32
// CHECK-NOT:   vote.sync
// CHECK:       popc.b32
// CHECK:       atom.shared.add.u32 %r{{[0-9]+}}, [%rd{{[0-9]+}}], %r{{[0-9]+}};
// CHECK:       shfl.sync.idx.b32
// CHECK:       st.global.b32
// CHECK:       st.global.b32
// CHECK:       bar.sync 0;
// CHECK:       st.global.b32 {{.*}}, -1;
// CHECK:       ret;

// permute: one 16-byte load and store per lane (zeros for a bad entry).
// CHECK-LABEL: .visible .entry permute(
// CHECK:       .maxntid 256, 1, 1
// CHECK:       ld.global.s32
// CHECK:       ld.global.v4.b32
// CHECK:       st.global.v4.b32
// CHECK:       ret;

// unpermute: the token's positions and weights as 16-byte loads, then the
// 8 rows' chunks, then one 16-byte store; no atomics.
// CHECK-LABEL: .visible .entry unpermute(
// CHECK:       .maxntid 256, 1, 1
// CHECK-COUNT-4: ld.global.v4.b32
// CHECK-COUNT-8: ld.global.v4.b32
// CHECK-NOT:   atom
// CHECK:       st.global.v4.b32
// CHECK:       ret;

// NOLOCAL-NOT: .local
// NOLOCAL-NOT: call
func.func @histogram(%ids: memref<?x8xi32>, %counts: memref<256xi32>,
                     %offsets: memref<256xi32>) {
  tessel.expert_histogram topk_ids(%ids : memref<?x8xi32>)
      counts(%counts : memref<256xi32>) group_offsets(%offsets : memref<256xi32>)
  return
}

func.func @sort(%ids: memref<?x8xi32>, %offsets: memref<256xi32>,
                %sorted: memref<?xi32>, %pos: memref<?x8xi32>) {
  tessel.expert_sort topk_ids(%ids : memref<?x8xi32>)
      group_offsets(%offsets : memref<256xi32>)
      sorted_rows(%sorted : memref<?xi32>) row_positions(%pos : memref<?x8xi32>)
  return
}

func.func @permute(%x: memref<?x7168xbf16>, %sorted: memref<?xi32>,
                   %out: memref<?x7168xbf16>) {
  tessel.moe_permute x(%x : memref<?x7168xbf16>)
      sorted_rows(%sorted : memref<?xi32>) out(%out : memref<?x7168xbf16>)
      {topk = 8 : i64}
  return
}

func.func @unpermute(%y: memref<?x7168xbf16>, %pos: memref<?x8xi32>,
                     %w: memref<?x8xf32>, %out: memref<?x7168xbf16>) {
  tessel.moe_unpermute y(%y : memref<?x7168xbf16>)
      row_positions(%pos : memref<?x8xi32>) weights(%w : memref<?x8xf32>)
      out(%out : memref<?x7168xbf16>)
  return
}
