//===- TesselAttrs.td - Tessel attributes and enums --------*- tablegen -*-===//
#ifndef TESSEL_ATTRS_TD
#define TESSEL_ATTRS_TD

include "tessel/Dialect/Tessel/IR/TesselBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tessel_KVLayout : I32EnumAttr<"KVLayout", "layout of a paged KV cache", [
    I32EnumAttrCase<"NHD", 0, "nhd">,
    I32EnumAttrCase<"Shuffled", 1, "shuffled">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::tessel";
  let description = [{
    `nhd`: K and V caches are each `[num_blocks, block_size, num_kv_heads,
    head_dim]`.

    `shuffled` (the CDNA pre-shuffled layout), with `x = 16 / sizeof(elem)`:
    K is `[num_blocks, num_kv_heads, head_dim / x, block_size, x]` and V is
    `[num_blocks, num_kv_heads, block_size / x, head_dim, x]`, so that one
    16-byte load per lane lands in the MFMA operand layout.
  }];
}

def Tessel_KVLayoutAttr : EnumAttr<Tessel_Dialect, Tessel_KVLayout, "kv_layout">;

#endif // TESSEL_ATTRS_TD
