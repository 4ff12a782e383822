// Tile configurations timed beside the defaults by grouped_matmul_bench.py
// (a row each under the default kernel of the same shape): the reference MoE
// gate/up projection (E=128, N=1024, K=2048; default 64x256x32, 1x4 warps,
// 4 stages), DeepSeek-V3's fused gate/up (E=32, N=4096, K=7168) and the
// reference gate/up wgrad (M=1024, N=2048; default 128x128x32, 2x2 warps).
// Results: docs/performance.md. Not among scripts/prepare-gpu-bundles.sh's
// specs (the sm80 template's tile experiments); compile it by hand:
//   tessel-aot bench/grouped_matmul_configs.mlir --targets=sm80,sm90 \
//       -o .carry/grouped_matmul_configs.tsb

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

func.func @cfg_t128x256s3_e32_n4096_k7168(%a: memref<?x7168xbf16>,
    %b: memref<32x4096x7168xbf16>, %g: memref<32xi32>,
    %c: memref<?x4096xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>)
      b(%b : memref<32x4096x7168xbf16>) group_offsets(%g : memref<32xi32>)
      c(%c : memref<?x4096xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 128, tile_n = 256, warps_m = 2, warps_n = 4, stages = 3}}
  return
}

func.func @cfg_t128x128s4_e32_n4096_k7168(%a: memref<?x7168xbf16>,
    %b: memref<32x4096x7168xbf16>, %g: memref<32xi32>,
    %c: memref<?x4096xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>)
      b(%b : memref<32x4096x7168xbf16>) group_offsets(%g : memref<32xi32>)
      c(%c : memref<?x4096xbf16>)
      {trans_b, tessel.gpu_tile = {tile_m = 128, tile_n = 128, warps_m = 2, warps_n = 2, stages = 4}}
  return
}

func.func @cfg_t64x256k64s3_e32_n4096_k7168(%a: memref<?x7168xbf16>,
    %b: memref<32x4096x7168xbf16>, %g: memref<32xi32>,
    %c: memref<?x4096xbf16>) {
  tessel.grouped_matmul a(%a : memref<?x7168xbf16>)
      b(%b : memref<32x4096x7168xbf16>) group_offsets(%g : memref<32xi32>)
      c(%c : memref<?x4096xbf16>)
      {trans_b, tessel.gpu_tile = {tile_k = 64, stages = 3}}
  return
}

func.func @cfgw_t128x256s3_e128_m1024_n2048(%a: memref<?x1024xbf16>,
    %b: memref<?x2048xbf16>, %g: memref<128xi32>,
    %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>)
      b(%b : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x1024x2048xf32>)
      {tessel.gpu_tile = {tile_m = 128, tile_n = 256, warps_m = 2, warps_n = 4, stages = 3}}
  return
}

func.func @cfgw_t256x128s3_e128_m1024_n2048(%a: memref<?x1024xbf16>,
    %b: memref<?x2048xbf16>, %g: memref<128xi32>,
    %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>)
      b(%b : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x1024x2048xf32>)
      {tessel.gpu_tile = {tile_m = 256, tile_n = 128, warps_m = 4, warps_n = 2, stages = 3}}
  return
}

func.func @cfgw_t128x128k64s3_e128_m1024_n2048(%a: memref<?x1024xbf16>,
    %b: memref<?x2048xbf16>, %g: memref<128xi32>,
    %c: memref<128x1024x2048xf32>) {
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>)
      b(%b : memref<?x2048xbf16>) group_offsets(%g : memref<128xi32>)
      c(%c : memref<128x1024x2048xf32>)
      {tessel.gpu_tile = {tile_k = 64, stages = 3}}
  return
}
