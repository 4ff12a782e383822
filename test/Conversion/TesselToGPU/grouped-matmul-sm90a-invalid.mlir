// RUN: tessel-opt %s -split-input-file -verify-diagnostics --tessel-to-gpu="chip=sm_90a stages=6"
// RUN: not tessel-opt %s --tessel-to-gpu="chip=sm_90a stages=1" 2>&1 | FileCheck %s --check-prefix=ONE

// The Hopper main loop's ring must fit in shared memory beside the
// epilogue's buffer (C staged for the TMA stores: 4 stages at most) and
// have a stage to fill while another is computed.

func.func @too_many_stages(%a: memref<?x2048xbf16>, %b: memref<8x1024x2048xbf16>,
                           %g: memref<8xi32>, %c: memref<?x1024xbf16>) {
  // expected-error@+1 {{GPU template: 6 stages of 128x256x64 tiles and a 32768-byte epilogue buffer need 329728 bytes of shared memory; sm_90a takes 2 to 4 stages}}
  tessel.grouped_matmul a(%a : memref<?x2048xbf16>)
      b(%b : memref<8x1024x2048xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<?x1024xbf16>) {trans_b}
  return
}

// ONE: error: {{.*}}GPU template: 1 stages of 128x256x64 tiles and a 32768-byte epilogue buffer need 83968 bytes of shared memory; sm_90a takes 2 to 4 stages

// -----

// So does the wgrad's.
func.func @wgrad_too_many_stages(%a: memref<?x1024xbf16>, %b: memref<?x2048xbf16>,
                                 %g: memref<8xi32>, %c: memref<8x1024x2048xbf16>) {
  // expected-error@+1 {{GPU template: 6 stages of 128x256x64 tiles and a 32768-byte epilogue buffer need 329728 bytes of shared memory; sm_90a takes 2 to 4 stages}}
  tessel.grouped_matmul_wgrad a(%a : memref<?x1024xbf16>)
      b(%b : memref<?x2048xbf16>) group_offsets(%g : memref<8xi32>)
      c(%c : memref<8x1024x2048xbf16>)
  return
}
