// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx942 | FileCheck %s --check-prefix=GFX942
// RUN: tessel-opt %s --tessel-to-gpu=chip=gfx950 | FileCheck %s --check-prefix=GFX950

// The ragged-M grouped matmul's tile on CDNA, where tiles are staged
// through registers into a double buffer: 128x256x32 with 2x2 waves of
// 64x128 (48 KB of LDS) where two such blocks fit a CU (gfx950's 160 KB),
// else 128x128x32 with 2x2 waves of 64x64 (32 KB: two blocks in gfx942's
// 64 KB, two waves a SIMD instead of one). The grid's N-tiles and M-tiles
// follow.

// GFX942-LABEL: gpu.func @moe_gate
// GFX942-SAME:    known_block_size = array<i32: 256, 1, 1>
// GFX942-SAME:    tessel.grid = [array<i64: -1, 1, 512, 128>, array<i64: 0, 1, 16383, 128>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 32768 : i64
// GFX950-LABEL: gpu.func @moe_gate
// GFX950-SAME:    known_block_size = array<i32: 256, 1, 1>
// GFX950-SAME:    tessel.grid = [array<i64: -1, 1, 512, 256>, array<i64: 0, 1, 16383, 128>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 49152 : i64
func.func @moe_gate(%a: memref<?x2048xbf16>, %b: memref<128x512x2048xbf16>,
                    %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x512x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x512xbf16>) {trans_b}
  return
}

// A tessel.gpu_tile override is taken as given (one wave a SIMD on gfx942).
// GFX942-LABEL: gpu.func @overridden
// GFX942-SAME:    tessel.grid = [array<i64: -1, 1, 512, 256>, array<i64: 0, 1, 8127, 64>, array<i64: -1, 1, 1, 1>], tessel.shared_bytes = 40960 : i64
// GFX950-LABEL: gpu.func @overridden
func.func @overridden(%a: memref<?x2048xbf16>, %b: memref<128x512x2048xbf16>,
                      %g: memref<128xi32>, %c: memref<?x512xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x512x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x512xbf16>) {trans_b, tessel.gpu_tile = {tile_n = 256}}
  return
}
