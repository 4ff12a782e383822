// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx942 -canonicalize | FileCheck %s --check-prefix=CDNA
// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx950 -canonicalize | FileCheck %s --check-prefix=CDNA
// RUN: tessel-opt %s --tessel-to-gpu=chip=sm80 -canonicalize | FileCheck %s --check-prefix=SM80

// Blocks that read the same data on CDNA's 8 L2 partitions (XCDs, dealt
// workgroups in turn): the linear block id is renumbered so that the
// blocks of one partition are consecutive (KernelBuilder::l2LocalBlockIds)
// — MLA decode's head groups of a request (its cache rows), a grouped
// matmul's N-tiles of an M-tile (its rows of a). One L2 on NVIDIA: the
// plain ids.

// CDNA-LABEL: gpu.func @mla
// CDNA:         %[[X:.*]] = gpu.block_id x
// CDNA:         %[[Y:.*]] = gpu.block_id y
// CDNA:         %[[Z:.*]] = gpu.block_id z
// CDNA:         %[[ZY:.*]] = arith.muli %[[Z]]
// CDNA:         arith.addi %[[ZY]], %[[Y]]
// CDNA:         %[[LINEAR:.*]] = arith.addi %{{.*}}, %[[X]]
// CDNA:         arith.ceildivui %{{.*}}, %c8
// CDNA-DAG:     arith.remui %[[LINEAR]], %c8
// CDNA-DAG:     arith.divui %[[LINEAR]], %c8
// SM80-LABEL: gpu.func @mla
// SM80-NOT:     arith.ceildivui %{{.*}}, %c8
// SM80:         gpu.return
func.func @mla(%q: memref<?x128x576xbf16>, %c: memref<?x64x576xbf16>, %bt: memref<?x?xi32>, %sl: memref<?xi32>, %out: memref<?x128x512xbf16>, %scale: f32) {
  tessel.mla_decode q(%q : memref<?x128x576xbf16>) kv_cache(%c : memref<?x64x576xbf16>) block_table(%bt : memref<?x?xi32>) seq_lens(%sl : memref<?xi32>) out(%out : memref<?x128x512xbf16>) scale(%scale)
  return
}

// CDNA-LABEL: gpu.func @gmm
// CDNA:         %[[X:.*]] = gpu.block_id x
// CDNA:         %[[Y:.*]] = gpu.block_id y
// CDNA:         arith.ceildivui %{{.*}}, %c8
// CDNA:         arith.remui %{{.*}}, %c8
// SM80-LABEL: gpu.func @gmm
// SM80-NOT:     arith.ceildivui %{{.*}}, %c8
// SM80:         gpu.return
func.func @gmm(%a: memref<?x2048xbf16>, %b: memref<128x512x2048xbf16>, %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>) b(%b : memref<128x512x2048xbf16>) group_offsets(%g : memref<128xi32>) c(%c : memref<?x512xbf16>) {trans_b}
  return
}
