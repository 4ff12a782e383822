//===- emulator/op_table.cpp - What each op index means -------------------===//
//
// One row per op of tessel/emulator_abi.h: its name for messages, whether it
// is a barrier, a wave op or a lane op, which chips have it, and the function
// with its semantics. The table the kernels call through (tessel_emu_lane::
// ops) hands every call, with its index, to the scheduler, which looks the
// row up here.
//
//===----------------------------------------------------------------------===//

#include "ops.h"
#include "scheduler.h"

#include <array>
#include <utility>

namespace tessel::runtime::emulator {

namespace {

const OpInfo kOps[] = {
    {"barrier", OpKind::Barrier, Availability::AllChips, false, nullptr,
     nullptr},
    {"ds_swizzle", OpKind::Wave, Availability::Amd, true, dsSwizzle, nullptr},
    {"ds_bpermute", OpKind::Wave, Availability::Amd, true, dsBpermute, nullptr},
    {"v_permlane16_swap", OpKind::Wave, Availability::Gfx950, true,
     permlaneSwap, nullptr},
    {"v_permlane32_swap", OpKind::Wave, Availability::Gfx950, true,
     permlaneSwap, nullptr},
    {"ballot", OpKind::Wave, Availability::Amd, true, amdBallot, nullptr},
    {"v_mbcnt_lo", OpKind::Lane, Availability::Amd, true, nullptr, mbcnt},
    {"v_mbcnt_hi", OpKind::Lane, Availability::Amd, true, nullptr, mbcnt},
    {"mfma", OpKind::Wave, Availability::Amd, true, mfma, nullptr},
    {"shfl.sync.bfly", OpKind::Wave, Availability::Nvidia, true, shfl, nullptr},
    {"shfl.sync.up", OpKind::Wave, Availability::Nvidia, true, shfl, nullptr},
    {"shfl.sync.down", OpKind::Wave, Availability::Nvidia, true, shfl, nullptr},
    {"shfl.sync.idx", OpKind::Wave, Availability::Nvidia, true, shfl, nullptr},
    {"vote.sync.ballot", OpKind::Wave, Availability::Nvidia, true, voteBallot,
     nullptr},
    {"mma.sync.m16n8k16", OpKind::Wave, Availability::Nvidia, true, mmaM16N8K16,
     nullptr},
    {"ldmatrix", OpKind::Wave, Availability::Nvidia, true, ldmatrix, nullptr},
    {"cp.async", OpKind::Lane, Availability::Nvidia, true, nullptr, cpAsync},
    {"cp.async.commit_group", OpKind::Lane, Availability::Nvidia, false,
     nullptr, cpAsyncCommit},
    {"cp.async.wait_group", OpKind::Lane, Availability::Nvidia, true, nullptr,
     cpAsyncWait},
    {"v_mov_b32_dpp", OpKind::Wave, Availability::Amd, true, updateDpp,
     nullptr},
    {"buffer_load", OpKind::Lane, Availability::Amd, true, nullptr, bufferLoad},
    {"v_readfirstlane", OpKind::Wave, Availability::Amd, true, readFirstLane,
     nullptr},
    {"wave_barrier", OpKind::Wave, Availability::Amd, false, waveBarrier,
     nullptr},
    {"ds_read_b64_tr_b16", OpKind::Wave, Availability::Gfx950, true, dsReadTr16,
     nullptr},
    {"v_readlane", OpKind::Wave, Availability::Amd, true, readLane, nullptr},
    {"buffer_load_lds", OpKind::Lane, Availability::Gfx950, true, nullptr,
     bufferLoadLds},
    {"s_waitcnt_vmcnt", OpKind::Lane, Availability::Amd, true, nullptr,
     vmcntWait},
};
static_assert(sizeof kOps / sizeof kOps[0] == TESSEL_EMU_OP_COUNT,
              "one row per op of emulator_abi.h");

/// Room past the last op: a call with a bad index (a kernel of another ABI
/// version that slipped past the load check, a corrupt one) gets an error
/// naming the index instead of a jump through whatever follows the table.
constexpr uint32_t kTableSize = 64;
static_assert(kTableSize >= TESSEL_EMU_OP_COUNT, "the table holds every op");

template <uint32_t Index> void enterOp(tessel_emu_lane *lane, void *io) {
  laneCallsOp(lane, Index, io);
}

template <uint32_t... Index>
constexpr std::array<tessel_emu_op, kTableSize>
makeTable(std::integer_sequence<uint32_t, Index...>) {
  return {{&enterOp<Index>...}};
}

const std::array<tessel_emu_op, kTableSize> kTable =
    makeTable(std::make_integer_sequence<uint32_t, kTableSize>());

} // namespace

const OpInfo *findOp(uint32_t index) {
  return index < TESSEL_EMU_OP_COUNT ? &kOps[index] : nullptr;
}

const tessel_emu_op *opTable() { return kTable.data(); }

bool isAvailable(const OpInfo &op, const EmulatedChip &chip) {
  switch (op.availability) {
  case Availability::AllChips:
    return true;
  case Availability::Amd:
    return chip.vendor == Vendor::Amd;
  case Availability::Gfx950:
    return chip.hasGfx950Ops;
  case Availability::Nvidia:
    return chip.vendor == Vendor::Nvidia;
  }
  return false;
}

} // namespace tessel::runtime::emulator
