//===- EmulateGPU.cpp - GPU kernels as host code run lane by lane ---------===//
//
// The interpreted targets (emu-gfx942, emu-gfx950, emu-sm80) take a chip's
// kernel at the last step before its back end — an LLVM-dialect function
// with ROCDL or NVVM intrinsics — and make it a host function that the
// runtime's emulator runs once per work-item, on a fiber of its own. Plain
// LLVM ops (integer and float arithmetic, loads and stores, vectors, control
// flow, atomics) keep their meaning on the host; what remains is the part
// of the kernel whose meaning is the chip's: its ids, its workgroup memory
// and its intrinsics. Each intrinsic becomes a call through the lane's op
// table (runtime/include/tessel/emulator_abi.h), whose implementation
// follows the ISA's description, not the templates' (TargetInfo's)
// assumptions about it — that independence is what makes a run of the
// emulator a check of the templates.
//
//===----------------------------------------------------------------------===//

#include "tessel/Target/Passes.h"

#include "tessel/emulator_abi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"

#include "llvm/ADT/StringExtras.h"

#include <cstddef>

namespace mlir::tessel {
#define GEN_PASS_DEF_TESSELEMULATEGPU
#include "tessel/Target/Passes.h.inc"
} // namespace mlir::tessel

using namespace mlir;

namespace {

//===----------------------------------------------------------------------===//
// Address spaces
//===----------------------------------------------------------------------===//

/// `type` with every pointer in address space 0: on the host, global,
/// workgroup and generic memory are all plain memory.
Type withoutAddressSpaces(Type type) {
  MLIRContext *ctx = type.getContext();
  if (auto ptr = dyn_cast<LLVM::LLVMPointerType>(type))
    return ptr.getAddressSpace() ? LLVM::LLVMPointerType::get(ctx) : type;
  if (auto array = dyn_cast<LLVM::LLVMArrayType>(type))
    return LLVM::LLVMArrayType::get(
        withoutAddressSpaces(array.getElementType()), array.getNumElements());
  if (auto vector = dyn_cast<VectorType>(type))
    return vector.clone(withoutAddressSpaces(vector.getElementType()));
  if (auto strct = dyn_cast<LLVM::LLVMStructType>(type)) {
    if (strct.isIdentified())
      return type;
    SmallVector<Type> body;
    for (Type t : strct.getBody())
      body.push_back(withoutAddressSpaces(t));
    return LLVM::LLVMStructType::getLiteral(ctx, body, strct.isPacked());
  }
  if (auto fn = dyn_cast<LLVM::LLVMFunctionType>(type)) {
    SmallVector<Type> params;
    for (Type t : fn.getParams())
      params.push_back(withoutAddressSpaces(t));
    return LLVM::LLVMFunctionType::get(withoutAddressSpaces(fn.getReturnType()),
                                       params, fn.isVarArg());
  }
  return type;
}

void eraseAddressSpaces(ModuleOp module) {
  module.walk([](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(withoutAddressSpaces(arg.getType()));
    for (OpResult result : op->getResults())
      result.setType(withoutAddressSpaces(result.getType()));
    if (auto func = dyn_cast<LLVM::LLVMFuncOp>(op))
      func.setFunctionType(cast<LLVM::LLVMFunctionType>(
          withoutAddressSpaces(func.getFunctionType())));
  });
  // Casts between address spaces are now casts to the same type.
  module.walk([](LLVM::AddrSpaceCastOp cast) {
    cast.replaceAllUsesWith(cast.getArg());
    cast.erase();
  });
}

//===----------------------------------------------------------------------===//
// bf16 conversions
//===----------------------------------------------------------------------===//

/// Defines compiler-rt's __truncsfbf2 (f32 -> bf16, round to nearest even,
/// NaNs kept quiet: what the chips' conversions do) in the kernel's object.
/// x86 has no bf16 arithmetic, so its back end calls it for every f32 ->
/// bf16 conversion — and for bf16 vectors it promotes and truncates back —
/// and a kernel object loaded by the runtime has no compiler-rt to link.
void defineTruncsfbf2(ModuleOp module) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  auto fn = LLVM::LLVMFuncOp::create(
      b, loc, "__truncsfbf2",
      LLVM::LLVMFunctionType::get(b.getBF16Type(), {f32}));
  fn.setVisibility_(LLVM::Visibility::Hidden);
  b.setInsertionPointToStart(fn.addEntryBlock(b));
  auto constant = [&](uint32_t v) -> Value {
    return LLVM::ConstantOp::create(b, loc, i32, v);
  };
  Value x = fn.getArgument(0);
  Value bits = LLVM::BitcastOp::create(b, loc, i32, x);
  Value high = LLVM::LShrOp::create(b, loc, bits, constant(16));
  Value odd = LLVM::AndOp::create(b, loc, high, constant(1));
  Value bias = LLVM::AddOp::create(b, loc, odd, constant(0x7FFF));
  Value rounded = LLVM::LShrOp::create(
      b, loc, LLVM::AddOp::create(b, loc, bits, bias), constant(16));
  Value quiet = LLVM::OrOp::create(b, loc, high, constant(0x40));
  Value isNan = LLVM::FCmpOp::create(b, loc, LLVM::FCmpPredicate::uno, x, x);
  Value result = LLVM::SelectOp::create(b, loc, isNan, quiet, rounded);
  result = LLVM::TruncOp::create(b, loc, b.getI16Type(), result);
  LLVM::ReturnOp::create(
      b, loc, LLVM::BitcastOp::create(b, loc, b.getBF16Type(), result));
}

//===----------------------------------------------------------------------===//
// Calls into the emulator
//===----------------------------------------------------------------------===//

/// Emits the replacement of one intrinsic inside one kernel body, whose
/// first argument is the lane and whose entry block holds one I/O record
/// buffer that every op call of the lane reuses (a lane makes one call at
/// a time, and the emulator only touches a record while its lane waits).
class LaneCalls {
public:
  LaneCalls(LLVM::LLVMFuncOp body, OpBuilder &b)
      : lane(body.getArgument(0)), b(b) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&body.getBody().front());
    Location loc = body.getLoc();
    Type i8 = b.getI8Type();
    Value one = LLVM::ConstantOp::create(b, loc, b.getI64Type(), 1);
    auto record = LLVM::LLVMArrayType::get(i8, kRecordBytes);
    io = LLVM::AllocaOp::create(b, loc, ptrType(), record, one,
                                /*alignment=*/16);
  }

  Type ptrType() { return LLVM::LLVMPointerType::get(b.getContext()); }

  /// The address `offset` bytes into `base`.
  Value at(Location loc, Value base, size_t offset) {
    return LLVM::GEPOp::create(
        b, loc, ptrType(), b.getI8Type(), base,
        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
  }

  /// A field of the lane (tessel_emu_lane), e.g. one of its ids.
  Value laneField(Location loc, size_t offset, Type type) {
    return LLVM::LoadOp::create(b, loc, type, at(loc, lane, offset));
  }

  /// Stores `value` into the I/O record at `offset` (any alignment).
  void put(Location loc, size_t offset, Value value) {
    LLVM::StoreOp::create(b, loc, value, at(loc, io, offset), /*alignment=*/1);
  }
  void put(Location loc, size_t offset, uint32_t constant) {
    put(loc, offset,
        LLVM::ConstantOp::create(b, loc, b.getI32Type(), constant));
  }
  Value get(Location loc, size_t offset, Type type) {
    return LLVM::LoadOp::create(b, loc, type, at(loc, io, offset),
                                /*alignment=*/1);
  }

  /// A `bytes`-byte, 16-byte aligned slot in the kernel's entry block (one
  /// per call site: a value that lives across the lane's calls).
  Value entrySlot(Location loc, size_t bytes) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfter(io.getDefiningOp());
    Value one = LLVM::ConstantOp::create(b, loc, b.getI64Type(), 1);
    return LLVM::AllocaOp::create(
        b, loc, ptrType(), LLVM::LLVMArrayType::get(b.getI8Type(), bytes), one,
        /*alignment=*/16);
  }

  /// Calls op `index` of the lane's table with the record (or null).
  void call(Location loc, tessel_emu_op_index index, bool withRecord = true) {
    Value table = LLVM::LoadOp::create(b, loc, ptrType(), lane);
    Value slot = LLVM::GEPOp::create(
        b, loc, ptrType(), ptrType(), table,
        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(index)});
    Value fn = LLVM::LoadOp::create(b, loc, ptrType(), slot);
    Value record =
        withRecord ? io : LLVM::ZeroOp::create(b, loc, ptrType()).getResult();
    auto type = LLVM::LLVMFunctionType::get(
        LLVM::LLVMVoidType::get(b.getContext()), {ptrType(), ptrType()});
    LLVM::CallOp::create(b, loc, type, ValueRange{fn, lane, record});
  }

  Value lane;

private:
  /// Room for the largest record (tessel_emu_mfma_io).
  static constexpr size_t kRecordBytes = 256;
  static_assert(sizeof(tessel_emu_mfma_io) <= kRecordBytes &&
                sizeof(tessel_emu_buffer_load_io) <= kRecordBytes &&
                sizeof(tessel_emu_ldmatrix_io) <= kRecordBytes &&
                sizeof(tessel_emu_ds_read_tr_io) <= kRecordBytes &&
                sizeof(tessel_emu_mma_io) <= kRecordBytes);
  OpBuilder &b;
  Value io;
};

/// `value` (any 32-bit scalar or 2-element 16-bit vector) as an i32.
Value asI32(OpBuilder &b, Location loc, Value value) {
  Type i32 = b.getI32Type();
  return value.getType() == i32
             ? value
             : LLVM::BitcastOp::create(b, loc, i32, value).getResult();
}
Value fromI32(OpBuilder &b, Location loc, Value value, Type type) {
  return type == value.getType()
             ? value
             : LLVM::BitcastOp::create(b, loc, type, value).getResult();
}

/// An integer operand that must be the constant `expected`.
LogicalResult expectConstant(Operation *op, unsigned operand, int64_t expected,
                             StringRef what) {
  APInt value;
  if (matchPattern(op->getOperand(operand), m_ConstantInt(&value)) &&
      value.getSExtValue() == expected)
    return success();
  return op->emitError() << "the GPU emulator models " << op->getName()
                         << " with " << what << " = " << expected << " only";
}

/// The MFMA of an intrinsic name such as rocdl.mfma.f32.32x32x8bf16.1k or
/// rocdl.mfma.f32.16x16x32.bf16: m, n, k and the element type.
struct MfmaShape {
  uint32_t m, n, k;
  tessel_emu_elem elem;
};
std::optional<MfmaShape> parseMfma(StringRef name) {
  if (!name.consume_front("rocdl.mfma.f32."))
    return std::nullopt;
  name.consume_back(".1k");
  SmallVector<StringRef> parts;
  name.split(parts, 'x');
  if (parts.size() != 3)
    return std::nullopt;
  MfmaShape shape;
  StringRef kAndType = parts[2];
  size_t digits = kAndType.find_first_not_of("0123456789");
  StringRef type = kAndType.substr(digits).ltrim('.');
  if (parts[0].getAsInteger(10, shape.m) ||
      parts[1].getAsInteger(10, shape.n) ||
      kAndType.substr(0, digits).getAsInteger(10, shape.k))
    return std::nullopt;
  if (type == "bf16")
    shape.elem = TESSEL_EMU_BF16;
  else if (type == "f16")
    shape.elem = TESSEL_EMU_F16;
  else
    return std::nullopt;
  // The shapes emulator_abi.h documents (the gfx942 and gfx950 ones the
  // templates use); other MFMAs have other lane layouts.
  bool known =
      (shape.m == 32 && shape.n == 32 && (shape.k == 8 || shape.k == 16)) ||
      (shape.m == 16 && shape.n == 16 && (shape.k == 16 || shape.k == 32));
  return known ? std::optional(shape) : std::nullopt;
}

//===----------------------------------------------------------------------===//
// The intrinsics
//===----------------------------------------------------------------------===//

/// Replaces `op` (inside a kernel body) by its emulation. Fails, with an
/// error naming the op, on an intrinsic the emulator does not model.
LogicalResult emulate(Operation *op, LaneCalls &calls, OpBuilder &b) {
  StringRef name = op->getName().getStringRef();
  Location loc = op->getLoc();
  Type i32 = b.getI32Type();
  b.setInsertionPoint(op);

  auto replace = [&](Value v) {
    op->getResult(0).replaceAllUsesWith(v);
    op->erase();
    return success();
  };
  // Ids and sizes: 32-bit fields of the lane, indexed by dimension.
  auto dimension = [&](StringRef suffix) -> int {
    return suffix == "x" ? 0 : suffix == "y" ? 1 : suffix == "z" ? 2 : -1;
  };
  auto idField = [&](size_t base, StringRef suffix) -> LogicalResult {
    int d = dimension(suffix);
    if (d < 0)
      return op->emitError() << "the GPU emulator does not model " << name;
    Value v = calls.laneField(loc, base + 4 * d, i32);
    Type type = op->getResult(0).getType();
    if (type != i32)
      v = LLVM::ZExtOp::create(b, loc, type, v);
    return replace(v);
  };
  // A u32 op: operands a, b (either may be absent), result.
  auto u32Op = [&](tessel_emu_op_index index, Value a, Value bv) {
    if (a)
      calls.put(loc, offsetof(tessel_emu_u32_io, a), asI32(b, loc, a));
    if (bv)
      calls.put(loc, offsetof(tessel_emu_u32_io, b), asI32(b, loc, bv));
    calls.call(loc, index);
    return calls.get(loc, offsetof(tessel_emu_u32_io, result), i32);
  };

  // --- Both vendors: ids, barriers, exact transcendental functions -------
  // Block sizes are constants of the kernel (known_block_size) and grid
  // sizes come from the shapes, so the templates read only these ids.
  for (auto [prefix, base] :
       {std::pair{"rocdl.workitem.id.", offsetof(tessel_emu_lane, thread_id)},
        {"rocdl.workgroup.id.", offsetof(tessel_emu_lane, block_id)},
        {"nvvm.read.ptx.sreg.tid.", offsetof(tessel_emu_lane, thread_id)},
        {"nvvm.read.ptx.sreg.ctaid.", offsetof(tessel_emu_lane, block_id)}})
    if (name.starts_with(prefix))
      return idField(base, name.drop_front(StringRef(prefix).size()));

  if (name == "rocdl.barrier" || name == "nvvm.barrier0") {
    calls.call(loc, TESSEL_EMU_BARRIER, /*withRecord=*/false);
    op->erase();
    return success();
  }
  // The hardware's approximations (v_exp_f32, v_log_f32, ex2.approx.ftz,
  // lg2.approx.ftz), all base 2, become the exact functions: the emulator
  // checks the kernels' arithmetic, not the units' last bits.
  auto exact = [&](bool exp2) {
    Value x = op->getOperand(0);
    Value v = exp2 ? LLVM::Exp2Op::create(b, loc, x.getType(), x).getResult()
                   : LLVM::Log2Op::create(b, loc, x.getType(), x).getResult();
    return replace(v);
  };
  if (name == "rocdl.exp2")
    return exact(true);
  if (name == "rocdl.log")
    return exact(false);
  if (auto call = dyn_cast<LLVM::CallIntrinsicOp>(op)) {
    StringRef intrinsic = call.getIntrin();
    if (intrinsic == "llvm.nvvm.ex2.approx.ftz.f")
      return exact(true);
    if (intrinsic == "llvm.nvvm.lg2.approx.ftz.f")
      return exact(false);
    if (intrinsic == "llvm.amdgcn.wave.barrier") {
      calls.call(loc, TESSEL_EMU_WAVE_BARRIER, /*withRecord=*/false);
      op->erase();
      return success();
    }
    if (intrinsic.starts_with("llvm.nvvm.") ||
        intrinsic.starts_with("llvm.amdgcn."))
      return op->emitError()
             << "the GPU emulator does not model the intrinsic " << intrinsic;
    return success();
  }

  // --- AMD ----------------------------------------------------------------
  // A lane's loads to registers have returned when they return and an
  // order for the back end's scheduler is nothing; a wait on the vector
  // memory counter retires loads to LDS (gfx9 s_waitcnt: vmcnt in bits
  // [3:0] and [15:14], 63 = no wait).
  if (auto wait = dyn_cast<ROCDL::SWaitcntOp>(op)) {
    uint32_t bits = static_cast<uint32_t>(wait.getBitfield());
    uint32_t vmcnt = (bits & 0xf) | ((bits >> 14) & 0x3) << 4;
    if (vmcnt < 63) {
      calls.put(loc, offsetof(tessel_emu_u32_io, a), vmcnt);
      calls.call(loc, TESSEL_EMU_VMCNT_WAIT);
    }
    op->erase();
    return success();
  }
  // TargetInfo::opaqueCopy: its operand.
  if (auto asmOp = dyn_cast<LLVM::InlineAsmOp>(op)) {
    if (!asmOp.getAsmString().empty() || asmOp.getNumOperands() != 1 ||
        asmOp.getNumResults() != 1)
      return op->emitError()
             << "the GPU emulator models only empty asm statements of one "
                "operand (TargetInfo::opaqueCopy)";
    asmOp.getResult(0).replaceAllUsesWith(asmOp.getOperand(0));
    op->erase();
    return success();
  }
  if (name == "rocdl.sched.barrier") {
    op->erase();
    return success();
  }
  if (name == "rocdl.ds_swizzle")
    return replace(
        u32Op(TESSEL_EMU_DS_SWIZZLE, op->getOperand(0), op->getOperand(1)));
  if (auto dpp = dyn_cast<ROCDL::DPPUpdateOp>(op)) {
    calls.put(loc, offsetof(tessel_emu_dpp_io, old_value),
              asI32(b, loc, dpp.getOld()));
    calls.put(loc, offsetof(tessel_emu_dpp_io, src_value),
              asI32(b, loc, dpp.getSrc()));
    calls.put(loc, offsetof(tessel_emu_dpp_io, control), dpp.getDppCtrl());
    calls.put(loc, offsetof(tessel_emu_dpp_io, row_mask), dpp.getRowMask());
    calls.put(loc, offsetof(tessel_emu_dpp_io, bank_mask), dpp.getBankMask());
    calls.put(loc, offsetof(tessel_emu_dpp_io, bound_ctrl),
              uint32_t(dpp.getBoundCtrl()));
    calls.call(loc, TESSEL_EMU_UPDATE_DPP);
    return replace(fromI32(
        b, loc, calls.get(loc, offsetof(tessel_emu_dpp_io, result), i32),
        dpp.getType()));
  }
  if (name == "rocdl.ds_bpermute")
    return replace(
        u32Op(TESSEL_EMU_DS_BPERMUTE, op->getOperand(0), op->getOperand(1)));
  if (auto read = dyn_cast<ROCDL::ds_read_tr16_b64>(op)) {
    calls.put(loc, offsetof(tessel_emu_ds_read_tr_io, address),
              read->getOperand(0));
    calls.call(loc, TESSEL_EMU_DS_READ_TR16);
    return replace(calls.get(loc, offsetof(tessel_emu_ds_read_tr_io, result),
                             read->getResult(0).getType()));
  }
  if (name == "rocdl.readfirstlane") {
    if (op->getOperand(0).getType() != i32)
      return op->emitError()
             << "the GPU emulator models rocdl.readfirstlane of i32 only";
    return replace(u32Op(TESSEL_EMU_READFIRSTLANE, op->getOperand(0), Value()));
  }
  if (name == "rocdl.readlane") {
    if (op->getOperand(0).getType() != i32)
      return op->emitError()
             << "the GPU emulator models rocdl.readlane of i32 only";
    return replace(
        u32Op(TESSEL_EMU_READLANE, op->getOperand(0), op->getOperand(1)));
  }
  if (name == "rocdl.mbcnt.lo" || name == "rocdl.mbcnt.hi")
    return replace(
        u32Op(name.ends_with("lo") ? TESSEL_EMU_MBCNT_LO : TESSEL_EMU_MBCNT_HI,
              op->getOperand(0), op->getOperand(1)));
  if (name == "rocdl.permlane16.swap" || name == "rocdl.permlane32.swap") {
    Type type = op->getOperand(0).getType();
    calls.put(loc, offsetof(tessel_emu_swap_io, old_value),
              asI32(b, loc, op->getOperand(0)));
    calls.put(loc, offsetof(tessel_emu_swap_io, src_value),
              asI32(b, loc, op->getOperand(1)));
    calls.call(loc, name == "rocdl.permlane16.swap"
                        ? TESSEL_EMU_PERMLANE16_SWAP
                        : TESSEL_EMU_PERMLANE32_SWAP);
    Type result = op->getResult(0).getType();
    Value s = LLVM::UndefOp::create(b, loc, result);
    Value oldOut = fromI32(
        b, loc, calls.get(loc, offsetof(tessel_emu_swap_io, old_result), i32),
        type);
    Value srcOut = fromI32(
        b, loc, calls.get(loc, offsetof(tessel_emu_swap_io, src_result), i32),
        type);
    s = LLVM::InsertValueOp::create(b, loc, s, oldOut, ArrayRef<int64_t>{0});
    s = LLVM::InsertValueOp::create(b, loc, s, srcOut, ArrayRef<int64_t>{1});
    return replace(s);
  }
  if (name == "rocdl.ballot" || name == "nvvm.vote.sync") {
    bool nvidia = name == "nvvm.vote.sync";
    if (nvidia &&
        op->getAttrOfType<NVVM::VoteSyncKindAttr>("kind").getValue() !=
            NVVM::VoteSyncKind::ballot)
      return op->emitError() << "the GPU emulator models vote.sync.ballot only";
    Value predicate = op->getOperand(nvidia ? 1 : 0);
    calls.put(loc, offsetof(tessel_emu_ballot_io, predicate),
              LLVM::ZExtOp::create(b, loc, i32, predicate).getResult());
    if (nvidia)
      calls.put(loc, offsetof(tessel_emu_ballot_io, member), op->getOperand(0));
    calls.call(loc, nvidia ? TESSEL_EMU_VOTE_BALLOT : TESSEL_EMU_BALLOT);
    Value mask =
        calls.get(loc, offsetof(tessel_emu_ballot_io, mask), b.getI64Type());
    Type type = op->getResult(0).getType();
    if (type != mask.getType())
      mask = LLVM::TruncOp::create(b, loc, type, mask);
    return replace(mask);
  }
  // A raw buffer resource is a tessel_emu_buffer_resource in a slot of
  // the kernel's entry block, the pointer to it its value; the loads
  // through it are the emulator's (bounds checks and all).
  if (auto make = dyn_cast<ROCDL::MakeBufferRsrcOp>(op)) {
    Value slot = calls.entrySlot(loc, sizeof(tessel_emu_buffer_resource));
    auto field = [&](size_t offset, Value value) {
      LLVM::StoreOp::create(b, loc, value, calls.at(loc, slot, offset));
    };
    field(offsetof(tessel_emu_buffer_resource, base), make.getBase());
    field(offsetof(tessel_emu_buffer_resource, num_records),
          LLVM::TruncOp::create(b, loc, i32, make.getNumRecords()));
    field(offsetof(tessel_emu_buffer_resource, stride),
          LLVM::ZExtOp::create(b, loc, i32, make.getStride()));
    return replace(slot);
  }
  if (auto load = dyn_cast<ROCDL::RawPtrBufferLoadOp>(op)) {
    Type type = load.getRes().getType();
    auto vector = dyn_cast<VectorType>(type);
    Type scalar = vector ? vector.getElementType() : type;
    int64_t bits = scalar.isIntOrFloat() ? scalar.getIntOrFloatBitWidth() : 0;
    int64_t bytes = bits / 8 * (vector ? vector.getNumElements() : 1);
    if (bytes < 4 || bytes > 16 || bytes % 4)
      return op->emitError() << "the GPU emulator models buffer loads of 4, "
                                "8, 12 or 16 bytes, not "
                             << type;
    calls.put(loc, offsetof(tessel_emu_buffer_load_io, resource),
              load.getRsrc());
    calls.put(loc, offsetof(tessel_emu_buffer_load_io, offset),
              load.getOffset());
    calls.put(loc, offsetof(tessel_emu_buffer_load_io, soffset),
              load.getSoffset());
    calls.put(loc, offsetof(tessel_emu_buffer_load_io, bytes),
              static_cast<uint32_t>(bytes));
    calls.call(loc, TESSEL_EMU_BUFFER_LOAD);
    return replace(
        calls.get(loc, offsetof(tessel_emu_buffer_load_io, result), type));
  }
  if (auto load = dyn_cast<ROCDL::RawPtrBufferLoadLdsOp>(op)) {
    calls.put(loc, offsetof(tessel_emu_buffer_load_lds_io, resource),
              load.getRsrc());
    // The instruction's offset field adds to both addresses: the LDS one
    // (M0's) and the voffset.
    calls.put(loc, offsetof(tessel_emu_buffer_load_lds_io, lds),
              LLVM::GEPOp::create(b, loc, load.getLdsPtr().getType(),
                                  b.getI8Type(), load.getLdsPtr(),
                                  ValueRange{load.getOffset()})
                  .getResult());
    calls.put(loc, offsetof(tessel_emu_buffer_load_lds_io, offset),
              LLVM::AddOp::create(b, loc, load.getVoffset(), load.getOffset())
                  .getResult());
    calls.put(loc, offsetof(tessel_emu_buffer_load_lds_io, soffset),
              load.getSoffset());
    calls.put(loc, offsetof(tessel_emu_buffer_load_lds_io, bytes),
              load.getSize());
    calls.call(loc, TESSEL_EMU_BUFFER_LOAD_LDS);
    op->erase();
    return success();
  }
  if (name.starts_with("rocdl.mfma.")) {
    std::optional<MfmaShape> shape = parseMfma(name);
    if (!shape)
      return op->emitError()
             << "the GPU emulator does not model " << name
             << " (it models the f32 MFMAs 32x32x8 and 16x16x16 bf16_1k/f16 "
                "of gfx942 and 32x32x16 and 16x16x32 bf16/f16 of gfx950)";
    const char *modifiers[] = {"cbsz", "abid", "blgp"};
    for (auto [i, what] : llvm::enumerate(modifiers))
      if (failed(expectConstant(op, 3 + i, 0, what)))
        return failure();
    calls.put(loc, offsetof(tessel_emu_mfma_io, m), shape->m);
    calls.put(loc, offsetof(tessel_emu_mfma_io, n), shape->n);
    calls.put(loc, offsetof(tessel_emu_mfma_io, k), shape->k);
    calls.put(loc, offsetof(tessel_emu_mfma_io, elem), shape->elem);
    calls.put(loc, offsetof(tessel_emu_mfma_io, a), op->getOperand(0));
    calls.put(loc, offsetof(tessel_emu_mfma_io, b), op->getOperand(1));
    calls.put(loc, offsetof(tessel_emu_mfma_io, c), op->getOperand(2));
    calls.call(loc, TESSEL_EMU_MFMA);
    return replace(calls.get(loc, offsetof(tessel_emu_mfma_io, d),
                             op->getResult(0).getType()));
  }

  // --- NVIDIA -------------------------------------------------------------
  if (auto shfl = dyn_cast<NVVM::ShflOp>(op)) {
    tessel_emu_op_index index;
    switch (shfl.getKind()) {
    case NVVM::ShflKind::bfly:
      index = TESSEL_EMU_SHFL_BFLY;
      break;
    case NVVM::ShflKind::up:
      index = TESSEL_EMU_SHFL_UP;
      break;
    case NVVM::ShflKind::down:
      index = TESSEL_EMU_SHFL_DOWN;
      break;
    case NVVM::ShflKind::idx:
      index = TESSEL_EMU_SHFL_IDX;
      break;
    }
    // The verifier admits 32-bit values only.
    Type valueType = shfl.getVal().getType();
    calls.put(loc, offsetof(tessel_emu_shfl_io, member), shfl.getThreadMask());
    calls.put(loc, offsetof(tessel_emu_shfl_io, value),
              asI32(b, loc, shfl.getVal()));
    calls.put(loc, offsetof(tessel_emu_shfl_io, offset), shfl.getOffset());
    calls.put(loc, offsetof(tessel_emu_shfl_io, clamp), shfl.getMaskAndClamp());
    calls.call(loc, index);
    Value value = fromI32(
        b, loc, calls.get(loc, offsetof(tessel_emu_shfl_io, result), i32),
        valueType);
    if (!shfl.getReturnValueAndIsValid())
      return replace(value);
    Value valid = LLVM::TruncOp::create(
        b, loc, b.getI1Type(),
        calls.get(loc, offsetof(tessel_emu_shfl_io, valid), i32));
    Value s = LLVM::UndefOp::create(b, loc, op->getResult(0).getType());
    s = LLVM::InsertValueOp::create(b, loc, s, value, ArrayRef<int64_t>{0});
    s = LLVM::InsertValueOp::create(b, loc, s, valid, ArrayRef<int64_t>{1});
    return replace(s);
  }
  if (auto mma = dyn_cast<NVVM::MmaOp>(op)) {
    NVVM::MMAShapeAttr shape = mma.getShape();
    std::optional<NVVM::MMATypes> typeA = mma.getMultiplicandAPtxType();
    bool bf16 = typeA == NVVM::MMATypes::bf16;
    bool f16 = typeA == NVVM::MMATypes::f16;
    if (shape.getM() != 16 || shape.getN() != 8 || shape.getK() != 16 ||
        (!bf16 && !f16) || mma.getLayoutA() != NVVM::MMALayout::row ||
        mma.getLayoutB() != NVVM::MMALayout::col ||
        mma.getOperandC().size() != 4 ||
        !mma.getOperandC()[0].getType().isF32())
      return op->emitError() << "the GPU emulator models mma.sync "
                                "m16n8k16.row.col f32.{bf16,f16}.f32 only";
    calls.put(loc, offsetof(tessel_emu_mma_io, elem),
              bf16 ? TESSEL_EMU_BF16 : TESSEL_EMU_F16);
    for (auto [i, v] : llvm::enumerate(mma.getOperandA()))
      calls.put(loc, offsetof(tessel_emu_mma_io, a) + 4 * i, asI32(b, loc, v));
    for (auto [i, v] : llvm::enumerate(mma.getOperandB()))
      calls.put(loc, offsetof(tessel_emu_mma_io, b) + 4 * i, asI32(b, loc, v));
    for (auto [i, v] : llvm::enumerate(mma.getOperandC()))
      calls.put(loc, offsetof(tessel_emu_mma_io, c) + 4 * i, v);
    calls.call(loc, TESSEL_EMU_MMA_M16N8K16);
    Value s = LLVM::UndefOp::create(b, loc, mma.getResult().getType());
    for (int64_t i = 0; i < 4; ++i)
      s = LLVM::InsertValueOp::create(
          b, loc, s,
          calls.get(loc, offsetof(tessel_emu_mma_io, d) + 4 * i,
                    b.getF32Type()),
          ArrayRef<int64_t>{i});
    return replace(s);
  }
  if (auto ld = dyn_cast<NVVM::LdMatrixOp>(op)) {
    if (ld.getShape().getM() != 8 || ld.getShape().getN() != 8 ||
        ld.getEltType() != NVVM::LdStMatrixEltType::B16)
      return op->emitError()
             << "the GPU emulator models ldmatrix .m8n8 .b16 only";
    uint32_t count = ld.getNum();
    calls.put(loc, offsetof(tessel_emu_ldmatrix_io, address), ld.getPtr());
    calls.put(loc, offsetof(tessel_emu_ldmatrix_io, count), count);
    calls.put(loc, offsetof(tessel_emu_ldmatrix_io, transpose),
              ld.getLayout() == NVVM::MMALayout::col ? 1u : 0u);
    calls.call(loc, TESSEL_EMU_LDMATRIX);
    auto reg = [&](int64_t i) {
      return calls.get(loc, offsetof(tessel_emu_ldmatrix_io, result) + 4 * i,
                       i32);
    };
    Type type = ld.getResult().getType();
    if (count == 1)
      return replace(reg(0));
    Value s = LLVM::UndefOp::create(b, loc, type);
    for (int64_t i = 0; i < count; ++i)
      s = LLVM::InsertValueOp::create(b, loc, s, reg(i), ArrayRef<int64_t>{i});
    return replace(s);
  }
  if (auto copy = dyn_cast<NVVM::CpAsyncOp>(op)) {
    Value bytes = LLVM::ConstantOp::create(b, loc, i32, copy.getSize());
    Value srcBytes = copy.getCpSize() ? copy.getCpSize() : bytes;
    calls.put(loc, offsetof(tessel_emu_cp_async_io, dst), copy.getDst());
    calls.put(loc, offsetof(tessel_emu_cp_async_io, src), copy.getSrc());
    calls.put(loc, offsetof(tessel_emu_cp_async_io, bytes), bytes);
    calls.put(loc, offsetof(tessel_emu_cp_async_io, src_bytes), srcBytes);
    calls.call(loc, TESSEL_EMU_CP_ASYNC);
    op->erase();
    return success();
  }
  if (isa<NVVM::CpAsyncCommitGroupOp>(op)) {
    calls.call(loc, TESSEL_EMU_CP_ASYNC_COMMIT, /*withRecord=*/false);
    op->erase();
    return success();
  }
  if (auto wait = dyn_cast<NVVM::CpAsyncWaitGroupOp>(op)) {
    calls.put(loc, offsetof(tessel_emu_u32_io, a),
              static_cast<uint32_t>(wait.getN()));
    calls.call(loc, TESSEL_EMU_CP_ASYNC_WAIT);
    op->erase();
    return success();
  }

  if (name.starts_with("rocdl.") || name.starts_with("nvvm.") ||
      name.starts_with("gpu.") || name.starts_with("nvgpu.") ||
      name.starts_with("amdgpu."))
    return op->emitError() << "the GPU emulator does not model " << name;
  return success();
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Turns kernel `body` (moved to the top level, lane not yet added) into
/// the lane-level body and adds the entry `@<name>(params, lane)`.
LogicalResult emulateKernel(LLVM::LLVMFuncOp body, ModuleOp module,
                            const DenseSet<StringAttr> &sharedGlobals) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  Location loc = body.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  std::string name = body.getName().str();
  SmallVector<Type> params(body.getFunctionType().getParams());

  // The body: `@<name>.lane(lane, args...)`, internal, with no GPU
  // attributes (kernel marks, block sizes, target features).
  body.setName(name + ".lane");
  body.setLinkage(LLVM::Linkage::Internal);
  SmallVector<StringAttr> foreign;
  for (NamedAttribute attr : body->getDiscardableAttrs())
    foreign.push_back(attr.getName());
  for (StringAttr attr : foreign)
    body->removeAttr(attr);
  body.removeTargetCpuAttr();
  body.removeTargetFeaturesAttr();
  body.setArgAttrsAttr(nullptr);
  SmallVector<Type> withLane = {ptr};
  withLane.append(params);
  body.setFunctionType(
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), withLane));
  body.getBody().front().insertArgument(0u, ptr, loc);

  LaneCalls calls(body, b);
  SmallVector<Operation *> ops;
  body.walk([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    if (auto address = dyn_cast<LLVM::AddressOfOp>(op)) {
      if (!sharedGlobals.contains(address.getGlobalNameAttr().getAttr()))
        return op->emitError("the GPU emulator models kernels whose only "
                             "global is the workgroup memory");
      b.setInsertionPoint(op);
      Value shared =
          calls.laneField(op->getLoc(), offsetof(tessel_emu_lane, shared), ptr);
      address.replaceAllUsesWith(shared);
      op->erase();
      continue;
    }
    if (failed(emulate(op, calls, b)))
      return failure();
  }

  // The entry: parameter i is read through params[i], as for host kernels.
  b.setInsertionPointAfter(body);
  auto entryType =
      LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr});
  auto entry = LLVM::LLVMFuncOp::create(b, loc, name, entryType);
  Block *block = entry.addEntryBlock(b);
  b.setInsertionPointToStart(block);
  SmallVector<Value> args = {block->getArgument(1)};
  for (auto [i, type] : llvm::enumerate(params)) {
    Value slot =
        LLVM::GEPOp::create(b, loc, ptr, ptr, block->getArgument(0),
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
    Value address = LLVM::LoadOp::create(b, loc, ptr, slot);
    args.push_back(LLVM::LoadOp::create(b, loc, type, address));
  }
  LLVM::CallOp::create(b, loc, body, args);
  LLVM::ReturnOp::create(b, loc, ValueRange());
  return success();
}

bool isKernel(LLVM::LLVMFuncOp func) {
  return func->hasAttr("rocdl.kernel") || func->hasAttr("nvvm.kernel") ||
         func->hasAttr("gpu.kernel");
}

struct TesselEmulateGPUPass
    : public tessel::impl::TesselEmulateGPUBase<TesselEmulateGPUPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<Operation *> containers;
    SmallVector<LLVM::LLVMFuncOp> kernels;
    DenseSet<StringAttr> sharedGlobals;
    for (Operation &op : *module.getBody()) {
      if (op.getName().getStringRef() != "gpu.module")
        continue;
      containers.push_back(&op);
      Block &body = op.getRegion(0).front();
      for (Operation &inner : llvm::make_early_inc_range(body)) {
        if (auto global = dyn_cast<LLVM::GlobalOp>(inner)) {
          // The workgroup memory: one zero-sized global per kernel, which
          // becomes the lane's shared buffer. Its name is per gpu.module,
          // so it is dropped rather than moved.
          if (global.getAddrSpace() != 3 || global.getValueOrNull()) {
            global.emitError("the GPU emulator models kernels whose only "
                             "global is the workgroup memory");
            return signalPassFailure();
          }
          sharedGlobals.insert(global.getSymNameAttr());
          continue;
        }
        if (auto func = dyn_cast<LLVM::LLVMFuncOp>(inner)) {
          if (func.isExternal() || !isKernel(func)) {
            func.emitError() << "the GPU emulator runs kernels only, not "
                                "the device function @"
                             << func.getName();
            return signalPassFailure();
          }
          inner.moveBefore(module.getBody(), module.getBody()->end());
          kernels.push_back(func);
        }
      }
    }
    for (Operation *container : containers)
      container->erase();
    module->removeAttr("gpu.container_module");

    eraseAddressSpaces(module);
    // Scopes name GPU memory hierarchies (workgroup, agent); on the host
    // every atomic is system-wide.
    module.walk([](Operation *op) { op->removeAttr("syncscope"); });
    defineTruncsfbf2(module);
    for (LLVM::LLVMFuncOp kernel : kernels)
      if (failed(emulateKernel(kernel, module, sharedGlobals)))
        return signalPassFailure();
  }
};

} // namespace
