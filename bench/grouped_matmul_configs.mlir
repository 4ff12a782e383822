// Tile configurations of the reference MoE gate/up projection (E=128,
// N=1024, K=2048), timed beside the default (gm_e128_n1024_k2048 in
// grouped_matmul_kernels.mlir: 64x256x32, 1x4 warps, 4 stages) by
// grouped_matmul_check.py. Results: docs/performance.md.

func.func @cfg_t128x128s3_e128_n1024_k2048(%a: memref<?x2048xbf16>,
    %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
    %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 128, tile_n = 128, warps_m = 2, warps_n = 2, stages = 3}}
  return
}

func.func @cfg_t128x128s4_e128_n1024_k2048(%a: memref<?x2048xbf16>,
    %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
    %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 128, tile_n = 128, warps_m = 2, warps_n = 2, stages = 4}}
  return
}

func.func @cfg_t128x128s5_e128_n1024_k2048(%a: memref<?x2048xbf16>,
    %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
    %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 128, tile_n = 128, warps_m = 2, warps_n = 2, stages = 5}}
  return
}

func.func @cfg_t128x128k64s3_e128_n1024_k2048(%a: memref<?x2048xbf16>,
    %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
    %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 128, tile_n = 128, tile_k = 64, warps_m = 2, warps_n = 2, stages = 3}}
  return
}

func.func @cfg_t64x256s3_e128_n1024_k2048(%a: memref<?x2048xbf16>,
    %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
    %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 64, tile_n = 256, warps_m = 1, warps_n = 4, stages = 3}}
  return
}

func.func @cfg_t64x256s5_e128_n1024_k2048(%a: memref<?x2048xbf16>,
    %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
    %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 64, tile_n = 256, warps_m = 1, warps_n = 4, stages = 5}}
  return
}

func.func @cfg_t64x128s4_e128_n1024_k2048(%a: memref<?x2048xbf16>,
    %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
    %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 64, tile_n = 128, warps_m = 2, warps_n = 2, stages = 4}}
  return
}

func.func @cfg_t128x256s4_e128_n1024_k2048(%a: memref<?x2048xbf16>,
    %b: memref<128x1024x2048xbf16>, %g: memref<128xi32>,
    %c: memref<?x1024xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<128x1024x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<?x1024xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 128, tile_n = 256, warps_m = 2, warps_n = 4, stages = 4}}
  return
}
