//===- KernelSignature.cpp - Kernel signatures of tessel ops --------------===//
//
// Each op lists its operands with a name for every dimension. Dimensions that
// share a name must agree at run time (the runtime checks it); a dimension
// whose size is static, or whose name has a static size elsewhere, becomes a
// constant; the remaining names become shape symbols passed to the kernel.
//
//===----------------------------------------------------------------------===//

#include "tessel/Dialect/Tessel/IR/KernelSignature.h"
#include "tessel/Dialect/Tessel/IR/TesselOps.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tessel;

namespace {

/// A named dimension: the size is `name * mul + add`.
struct DimName {
  DimName(const char *name, int64_t mul = 1, int64_t add = 0)
      : name(name), mul(mul), add(add) {}
  StringRef name;
  int64_t mul, add;
};

struct OperandSpec {
  Value value;
  StringRef name;
  bool isOutput;
  SmallVector<DimName> dims;
  bool elementwise = false;
};

/// Collects the operand specs and parameters of one op.
struct SpecBuilder {
  void in(Value v, StringRef name, ArrayRef<DimName> dims) {
    if (v)
      operands.push_back({v, name, false, SmallVector<DimName>(dims)});
  }
  void out(Value v, StringRef name, ArrayRef<DimName> dims) {
    if (v)
      operands.push_back({v, name, true, SmallVector<DimName>(dims)});
  }
  /// A block table [B, MB]: every GPU template reads it one entry at a time.
  void blockTable(Value v) {
    in(v, "block_table", {"B", "MB"});
    operands.back().elementwise = true;
  }
  /// A scalar passed by value: no dims.
  void scalar(Value v, StringRef name) { in(v, name, {}); }
  void param(StringRef key, int64_t value) { params.push_back({key.str(), value}); }
  void caches(Value kc, Value vc, KVLayout layout) {
    if (layout == KVLayout::NHD) {
      in(kc, "k_cache", {"NB", "BS", "Hkv", "Dk"});
      in(vc, "v_cache", {"NB", "BS", "Hkv", "Dv"});
    } else {
      in(kc, "k_cache", {"NB", "Hkv", "Dk/x", "BS", "x"});
      in(vc, "v_cache", {"NB", "Hkv", "BS/x", "Dv", "x"});
    }
    param("layout", static_cast<int64_t>(layout));
  }
  /// Head counts and dims of attention, from q `[., Hq, Dqk]` and out.
  void attentionParams(Value q, Value out, int64_t kvHeads, Value lse) {
    auto qt = cast<MemRefType>(q.getType());
    param("num_q_heads", qt.getDimSize(1));
    param("num_kv_heads", kvHeads);
    param("head_dim", qt.getDimSize(2));
    auto ot = cast<MemRefType>(out.getType());
    param("v_head_dim", ot.getDimSize(ot.getRank() - 1));
    param("has_lse", lse ? 1 : 0);
  }

  SmallVector<OperandSpec> operands;
  SmallVector<std::pair<std::string, int64_t>> params;
};

int64_t dimOf(Value v, unsigned d) {
  return cast<MemRefType>(v.getType()).getDimSize(d);
}

/// "groups": the group (expert) count of a grouped matmul or MoE routing
/// op, so that a lookup by shape parameters tells apart kernels for
/// different expert counts. Absent when it is dynamic.
void groupsParam(SpecBuilder &b, Value groupOffsets) {
  int64_t groups = dimOf(groupOffsets, 0);
  if (!ShapedType::isDynamic(groups))
    b.param("groups", groups);
}

/// Cache block size and KV heads, whatever the layout.
std::pair<int64_t, int64_t> cacheGeometry(Value kc, KVLayout layout) {
  auto type = cast<MemRefType>(kc.getType());
  return {getCacheBlockSize(type, layout), getCacheKVHeads(type, layout)};
}

void describe(PrefillAttentionOp op, SpecBuilder &b) {
  b.in(op.getQ(), "q", {"T", "Hq", "Dqk"});
  b.in(op.getK(), "k", {"T", "Hkv", "Dqk"});
  b.in(op.getV(), "v", {"T", "Hkv", "Dv"});
  b.in(op.getCuSeqlens(), "cu_seqlens", {{"B", 1, 1}});
  b.out(op.getOut(), "out", {"T", "Hq", "Dv"});
  b.out(op.getLse(), "lse", {"Hq", "T"});
  b.attentionParams(op.getQ(), op.getOut(), dimOf(op.getK(), 1), op.getLse());
  b.param("causal", op.getCausal() ? 1 : 0);
  b.scalar(op.getScale(), "scale");
}

void describe(DecodeAttentionOp op, SpecBuilder &b) {
  b.in(op.getQ(), "q", {"B", "Hq", "Dqk"});
  b.caches(op.getKCache(), op.getVCache(), op.getLayout());
  b.blockTable(op.getBlockTable());
  b.in(op.getSeqLens(), "seq_lens", {"B"});
  b.out(op.getOut(), "out", {"B", "Hq", "Dv"});
  b.out(op.getLse(), "lse", {"Hq", "B"});
  auto [bs, kvHeads] = cacheGeometry(op.getKCache(), op.getLayout());
  b.attentionParams(op.getQ(), op.getOut(), kvHeads, op.getLse());
  b.param("block_size", bs);
  b.scalar(op.getScale(), "scale");
}

void describe(ExtendAttentionOp op, SpecBuilder &b) {
  b.in(op.getQ(), "q", {"T", "Hq", "Dqk"});
  b.in(op.getK(), "k", {"T", "Hkv", "Dqk"});
  b.in(op.getV(), "v", {"T", "Hkv", "Dv"});
  b.caches(op.getKCache(), op.getVCache(), op.getLayout());
  b.blockTable(op.getBlockTable());
  b.in(op.getCuSeqlens(), "cu_seqlens", {{"B", 1, 1}});
  b.in(op.getContextLens(), "context_lens", {"B"});
  b.out(op.getOut(), "out", {"T", "Hq", "Dv"});
  b.out(op.getLse(), "lse", {"Hq", "T"});
  auto [bs, kvHeads] = cacheGeometry(op.getKCache(), op.getLayout());
  b.attentionParams(op.getQ(), op.getOut(), kvHeads, op.getLse());
  b.param("block_size", bs);
  b.scalar(op.getScale(), "scale");
}

void describe(PagedAttentionOp op, SpecBuilder &b) {
  const char *tokens = op.getCuSeqlens() ? "T" : "B";
  b.in(op.getQ(), "q", {tokens, "Hq", "Dqk"});
  b.caches(op.getKCache(), op.getVCache(), op.getLayout());
  b.blockTable(op.getBlockTable());
  b.in(op.getCuSeqlens(), "cu_seqlens", {{"B", 1, 1}});
  b.in(op.getContextLens(), "context_lens", {"B"});
  if (op.isSplit()) {
    b.out(op.getOut(), "out", {"P", tokens, "Hq", "Dv"});
    b.out(op.getLse(), "lse", {"P", "Hq", tokens});
  } else {
    b.out(op.getOut(), "out", {tokens, "Hq", "Dv"});
    b.out(op.getLse(), "lse", {"Hq", tokens});
  }
  auto [bs, kvHeads] = cacheGeometry(op.getKCache(), op.getLayout());
  b.attentionParams(op.getQ(), op.getOut(), kvHeads, op.getLse());
  b.param("block_size", bs);
  b.param("split", op.isSplit() ? 1 : 0);
  b.param("causal", op.getCausal() ? 1 : 0);
  b.scalar(op.getScale(), "scale");
}

void describe(ReshapeAndCacheOp op, SpecBuilder &b) {
  b.in(op.getK(), "k", {"T", "Hkv", "Dk"});
  b.in(op.getV(), "v", {"T", "Hkv", "Dv"});
  // The caches are written; they are the kernel's outputs.
  SpecBuilder caches;
  caches.caches(op.getKCache(), op.getVCache(), op.getLayout());
  for (OperandSpec &s : caches.operands)
    b.out(s.value, s.name, s.dims);
  b.in(op.getSlotMapping(), "slot_mapping", {"T"});
  auto [bs, kvHeads] = cacheGeometry(op.getKCache(), op.getLayout());
  b.param("num_kv_heads", kvHeads);
  b.param("head_dim", dimOf(op.getK(), 2));
  b.param("v_head_dim", dimOf(op.getV(), 2));
  b.param("block_size", bs);
  b.param("layout", static_cast<int64_t>(op.getLayout()));
}

void describe(MLADecodeOp op, SpecBuilder &b) {
  b.in(op.getQ(), "q", {"B", "H", "Dq"});
  b.in(op.getKvCache(), "kv_cache", {"NB", "BS", "Dq"});
  b.blockTable(op.getBlockTable());
  b.in(op.getSeqLens(), "seq_lens", {"B"});
  if (op.isSplit()) {
    b.out(op.getOut(), "out", {"P", "B", "H", "L"});
    b.out(op.getLse(), "lse", {"P", "H", "B"});
  } else {
    b.out(op.getOut(), "out", {"B", "H", "L"});
    b.out(op.getLse(), "lse", {"H", "B"});
  }
  b.param("num_heads", dimOf(op.getQ(), 1));
  b.param("head_dim", dimOf(op.getQ(), 2));
  b.param("latent_dim", dimOf(op.getOut(), op.isSplit() ? 3 : 2));
  b.param("split", op.isSplit() ? 1 : 0);
  b.param("block_size", dimOf(op.getKvCache(), 1));
  b.param("has_lse", op.getLse() ? 1 : 0);
  b.scalar(op.getScale(), "scale");
}

void describe(LseMergeOp op, SpecBuilder &b) {
  b.in(op.getOA(), "o_a", {"T", "H", "D"});
  b.in(op.getLseA(), "lse_a", {"H", "T"});
  b.in(op.getOB(), "o_b", {"T", "H", "D"});
  b.in(op.getLseB(), "lse_b", {"H", "T"});
  b.out(op.getOut(), "out", {"T", "H", "D"});
  b.out(op.getLseOut(), "lse_out", {"H", "T"});
  b.param("num_heads", dimOf(op.getOut(), 1));
  b.param("head_dim", dimOf(op.getOut(), 2));
  b.param("has_lse", op.getLseOut() ? 1 : 0);
}

void describe(LseMergeNOp op, SpecBuilder &b) {
  b.in(op.getPartials(), "partials", {"P", "T", "H", "D"});
  b.in(op.getPartialLse(), "partial_lse", {"P", "H", "T"});
  b.out(op.getOut(), "out", {"T", "H", "D"});
  b.out(op.getLseOut(), "lse_out", {"H", "T"});
  b.param("num_heads", dimOf(op.getOut(), 1));
  b.param("head_dim", dimOf(op.getOut(), 2));
  b.param("has_lse", op.getLseOut() ? 1 : 0);
}

void describe(GroupedMatmulOp op, SpecBuilder &b) {
  // Gathered rows: a holds S source rows, c and a_rows T.
  b.in(op.getA(), "a", {op.getARows() ? "S" : "T", "K"});
  if (op.isPointerTable())
    b.in(op.getB(), "b", {"G"});
  else if (op.getTransB())
    b.in(op.getB(), "b", {"G", "N", "K"});
  else
    b.in(op.getB(), "b", {"G", "K", "N"});
  b.in(op.getGroupOffsets(), "group_offsets", {"G"});
  b.out(op.getC(), "c", {"T", "N"});
  b.in(op.getARows(), "a_rows", {"T"});
  b.out(op.getAct(), "act", {"T", "I"});
  b.param("N", op.getN());
  b.param("K", op.getK());
  b.param("trans_b", op.getTransB() ? 1 : 0);
  b.param("pointer_table", op.isPointerTable() ? 1 : 0);
  // 0: a's rows are read in order.
  b.param("a_rows_divisor", op.getARows() ? op.getRowsDivisorOrOne() : 0);
  // 1: act = silu(gate) * up is written too.
  b.param("swiglu", op.getAct() ? 1 : 0);
  groupsParam(b, op.getGroupOffsets());
}

void describe(GroupedMatmulWgradOp op, SpecBuilder &b) {
  // A gathered operand holds its own number of source rows.
  b.in(op.getA(), "a", {op.getARows() ? "Sa" : "T", "M"});
  b.in(op.getB(), "b", {op.getBRows() ? "Sb" : "T", "N"});
  b.in(op.getGroupOffsets(), "group_offsets", {"G"});
  b.out(op.getC(), "c", {"G", "M", "N"});
  b.in(op.getARows(), "a_rows", {"T"});
  b.in(op.getBRows(), "b_rows", {"T"});
  b.param("M", dimOf(op.getA(), 1));
  b.param("N", dimOf(op.getB(), 1));
  // 0 where the operand's rows are read in order.
  int64_t divisor = op.getRowsDivisorOrOne();
  b.param("a_rows_divisor", op.getARows() ? divisor : 0);
  b.param("b_rows_divisor", op.getBRows() ? divisor : 0);
  groupsParam(b, op.getGroupOffsets());
}

void describe(ExpertHistogramOp op, SpecBuilder &b) {
  b.in(op.getTopkIds(), "topk_ids", {"T", "k"});
  b.out(op.getCounts(), "counts", {"E"});
  b.out(op.getGroupOffsets(), "group_offsets", {"E"});
  b.param("topk", dimOf(op.getTopkIds(), 1));
  groupsParam(b, op.getGroupOffsets());
}

void describe(ExpertSortOp op, SpecBuilder &b) {
  int64_t k = dimOf(op.getTopkIds(), 1);
  b.in(op.getTopkIds(), "topk_ids", {"T", "k"});
  b.in(op.getGroupOffsets(), "group_offsets", {"E"});
  b.out(op.getSortedRows(), "sorted_rows", {{"T", k, 0}});
  b.out(op.getRowPositions(), "row_positions", {"T", "k"});
  b.param("topk", k);
  groupsParam(b, op.getGroupOffsets());
}

void describe(MoePermuteOp op, SpecBuilder &b) {
  b.in(op.getX(), "x", {"T", "H"});
  b.in(op.getSortedRows(), "sorted_rows", {"R"});
  b.out(op.getOut(), "out", {"R", "H"});
  b.param("hidden", dimOf(op.getX(), 1));
  b.param("topk", op.getTopk());
}

void describe(MoeUnpermuteOp op, SpecBuilder &b) {
  b.in(op.getY(), "y", {"R", "H"});
  b.in(op.getRowPositions(), "row_positions", {"T", "k"});
  b.in(op.getWeights(), "weights", {"T", "k"});
  b.out(op.getOut(), "out", {"T", "H"});
  b.param("hidden", dimOf(op.getY(), 1));
  b.param("topk", dimOf(op.getRowPositions(), 1));
}

/// h of the SwiGLU ops, [R, 2I] or [2, R, I], with `rows` naming R; its
/// intermediate size and layout as parameters.
void gateUp(SpecBuilder &b, Value h, StringRef name, DimName rows) {
  bool fused = cast<MemRefType>(h.getType()).getRank() == 2;
  if (fused)
    b.in(h, name, {rows, "I2"});
  else
    b.in(h, name, {"P", rows, "I"});
  b.param("intermediate", fused ? dimOf(h, 1) / 2 : dimOf(h, 2));
  b.param("parts", fused ? 1 : 2);
}

void describe(SwigluOp op, SpecBuilder &b) {
  gateUp(b, op.getH(), "h", "R");
  b.out(op.getAct(), "act", {"R", "I"});
}

/// Rows are the (token, slot) pairs in expert order: R = T * k, so that
/// every d_topk_weights entry has a row whose lane writes it.
void describe(SwigluBackwardOp op, SpecBuilder &b) {
  int64_t k = dimOf(op.getRowPositions(), 1);
  DimName rows("T", k, 0);
  b.in(op.getGrad(), "grad", {rows, "I"});
  gateUp(b, op.getH(), "h", rows);
  b.in(op.getTopkWeights(), "topk_weights", {"T", "k"});
  b.in(op.getSortedRows(), "sorted_rows", {rows});
  b.in(op.getRowPositions(), "row_positions", {"T", "k"});
  // dh is h's twin.
  if (cast<MemRefType>(op.getH().getType()).getRank() == 2)
    b.out(op.getDh(), "dh", {rows, "I2"});
  else
    b.out(op.getDh(), "dh", {"P", rows, "I"});
  b.out(op.getActWeighted(), "act_weighted", {rows, "I"});
  b.out(op.getDTopkWeights(), "d_topk_weights", {"T", "k"});
  b.param("topk", k);
}

} // namespace

FailureOr<KernelSignature> mlir::tessel::analyzeKernel(func::FuncOp func) {
  auto fail = [&](const Twine &msg) -> FailureOr<KernelSignature> {
    return func.emitError() << "kernel '" << func.getName() << "': " << msg;
  };
  // Public functions always have a body (MLIR rejects public declarations).
  Block &body = func.getBody().front();
  if (func.getBody().getBlocks().size() != 1 || body.getOperations().size() != 2)
    return fail("the body must be exactly one tessel op and a return");
  Operation *op = &body.front();
  if (op->getDialect() == nullptr ||
      op->getDialect()->getNamespace() != TesselDialect::getDialectNamespace())
    return fail("the body must be one tessel op, got '" +
                op->getName().getStringRef() + "'");
  if (func.getNumResults() != 0)
    return fail("kernels return nothing; outputs are arguments");

  SpecBuilder b;
  TypeSwitch<Operation *>(op)
      .Case<PrefillAttentionOp, DecodeAttentionOp, ExtendAttentionOp,
            PagedAttentionOp, ReshapeAndCacheOp, MLADecodeOp, LseMergeOp,
            LseMergeNOp, GroupedMatmulOp, GroupedMatmulWgradOp,
            ExpertHistogramOp, ExpertSortOp, MoePermuteOp, MoeUnpermuteOp,
            SwigluOp, SwigluBackwardOp>(
          [&](auto typed) { describe(typed, b); })
      .Default([](Operation *) {
        llvm_unreachable("every tessel op has a kernel description");
      });
  if (op->getNumOperands() != b.operands.size())
    return fail("kernel ops take no index operands; '" +
                op->getName().getStringRef() +
                "' has a window that a kernel cannot take");

  // Map each function argument to the operand spec that uses it.
  SmallVector<const OperandSpec *> byArg(func.getNumArguments(), nullptr);
  for (const OperandSpec &s : b.operands) {
    // The body is one op, so every operand is a function argument.
    auto arg = cast<BlockArgument>(s.value);
    if (byArg[arg.getArgNumber()])
      return fail("operand '" + s.name + "' reuses argument #" +
                  Twine(arg.getArgNumber()) + "; kernel operands must be "
                  "distinct arguments");
    byArg[arg.getArgNumber()] = &s;
  }
  for (auto [i, s] : llvm::enumerate(byArg))
    if (!s)
      return fail("argument #" + Twine(i) + " is not used by the op");

  // Names with a static size anywhere are constants everywhere.
  llvm::StringMap<int64_t> staticValue;
  for (const OperandSpec &s : b.operands) {
    auto type = dyn_cast<MemRefType>(s.value.getType());
    if (!type)
      continue; // a scalar
    if (!type.getLayout().isIdentity())
      return fail("argument '" + s.name + "' must have the identity layout");
    for (auto [d, name] : llvm::enumerate(s.dims)) {
      int64_t size = type.getDimSize(d);
      if (!ShapedType::isDynamic(size) && (size - name.add) % name.mul == 0)
        staticValue.try_emplace(name.name, (size - name.add) / name.mul);
    }
  }

  KernelSignature sig;
  sig.op = op;
  sig.params = std::move(b.params);
  llvm::StringMap<int> symbolIndex;
  for (const OperandSpec *s : byArg) {
    KernelArg arg{s->name.str(), s->value.getType(), s->isOutput, {},
                  s->elementwise};
    for (auto [d, name] : llvm::enumerate(s->dims)) {
      int64_t size = cast<MemRefType>(arg.type).getDimSize(d);
      KernelDim dim;
      if (!ShapedType::isDynamic(size)) {
        dim.constant = size;
      } else if (auto it = staticValue.find(name.name); it != staticValue.end()) {
        dim.constant = it->second * name.mul + name.add;
      } else {
        auto [it2, inserted] =
            symbolIndex.try_emplace(name.name, sig.symbols.size());
        if (inserted)
          sig.symbols.push_back(name.name.str());
        dim.symbol = it2->second;
        dim.mul = name.mul;
        dim.add = name.add;
      }
      arg.dims.push_back(dim);
    }
    sig.args.push_back(std::move(arg));
  }
  return sig;
}
