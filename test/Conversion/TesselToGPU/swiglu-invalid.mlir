// RUN: tessel-opt %s -split-input-file -verify-diagnostics --tessel-to-gpu

// Rows are read and written in 16-byte chunks.
func.func @swiglu_odd_intermediate(%h: memref<?x22xbf16>, %a: memref<?x11xbf16>) {
  // expected-error@+1 {{GPU template: intermediate size (11) must be a multiple of 8 for 'bf16', so that every row is made of 16-byte chunks}}
  tessel.swiglu h(%h : memref<?x22xbf16>) act(%a : memref<?x11xbf16>)
  return
}
