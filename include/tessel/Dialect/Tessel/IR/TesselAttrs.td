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
  // The layouts are described in the dialect description (TesselBase.td).
}

def Tessel_KVLayoutAttr : EnumAttr<Tessel_Dialect, Tessel_KVLayout, "kv_layout">;

#endif // TESSEL_ATTRS_TD
