//===- emulator/ops.h - The semantics of the emulated intrinsics -*- C++
//-*-===//
//
// Each op of tessel/emulator_abi.h is a function here, separate from the
// scheduling: a wave op's function sees every lane's record at once (the
// scheduler calls it when the whole wave has arrived) and fills in every
// lane's results; a lane op's function sees one lane. Both report a bad
// operand as an OpFailure instead of computing garbage: a kernel that passes
// one is a compiler bug, and the message is how it gets found.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_EMULATOR_OPS_H
#define TESSEL_RUNTIME_EMULATOR_OPS_H

#include "chip.h"

#include "../support/format.h"

#include "tessel/emulator_abi.h"
#include "tessel/runtime.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace tessel::runtime::emulator {

class CpAsyncQueue;

/// Why an op could not run.
struct OpFailure {
  /// TESSEL_INTERNAL for what the kernel must never do (a compiler bug),
  /// TESSEL_UNSUPPORTED for what the chip can do but the emulator cannot.
  tessel_status_code code = TESSEL_OK;
  std::string message;
  /// The lane of the wave it concerns; -1 for the wave as a whole.
  int lane = -1;
};

/// Fills `failure` and returns false, for `return fail(...)` in the ops.
__attribute__((format(printf, 4, 5))) inline bool fail(OpFailure &failure,
                                                       tessel_status_code code,
                                                       int lane,
                                                       const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  failure.message = formatv(fmt, args);
  va_end(args);
  failure.code = code;
  failure.lane = lane;
  return false;
}

/// The block's shared memory, for checking the addresses ops are given.
struct SharedMemory {
  char *base = nullptr;
  size_t size = 0;

  bool contains(const void *address, size_t bytes) const {
    auto at = reinterpret_cast<uintptr_t>(address);
    auto begin = reinterpret_cast<uintptr_t>(base);
    return at >= begin && at - begin <= size && bytes <= size - (at - begin);
  }
};

/// A wave op whose every live lane has arrived.
struct WaveCall {
  uint32_t op;
  /// Each lane's record, by lane id (the chip's wave size of them); null for
  /// lanes that returned and for lanes past the end of a partial last wave.
  /// They read as zero.
  void *const *io;
  const EmulatedChip &chip;
  const SharedMemory &shared;
};

/// An op that involves one lane only.
struct LaneCall {
  uint32_t op;
  const tessel_emu_lane &lane;
  void *io;
  CpAsyncQueue &copies;
  const SharedMemory &shared;
};

using WaveOpFn = bool (*)(const WaveCall &call, OpFailure &failure);
using LaneOpFn = bool (*)(const LaneCall &call, OpFailure &failure);

enum class OpKind { Barrier, Wave, Lane };
enum class Availability { AllChips, Amd, Gfx950, Nvidia };

struct OpInfo {
  /// The instruction's name, for messages: "ds_swizzle".
  const char *name;
  OpKind kind;
  Availability availability;
  /// Whether `io` points to a record (all but the barrier and
  /// cp.async.commit_group).
  bool takesRecord;
  WaveOpFn wave; ///< for OpKind::Wave
  LaneOpFn lane; ///< for OpKind::Lane
};

/// The op with this index, or null if there is none.
const OpInfo *findOp(uint32_t index);

/// Whether `chip` has `op`: a kernel for another chip must not run.
bool isAvailable(const OpInfo &op, const EmulatedChip &chip);

/// The table lanes call ops through (tessel_emu_lane::ops). It has more
/// entries than there are ops: an index past the last names itself in the
/// error instead of jumping through garbage.
const tessel_emu_op *opTable();

// AMD (amd_ops.cpp).
bool dsSwizzle(const WaveCall &call, OpFailure &failure);
bool updateDpp(const WaveCall &call, OpFailure &failure);
bool dsBpermute(const WaveCall &call, OpFailure &failure);
bool permlaneSwap(const WaveCall &call, OpFailure &failure);
bool dsReadTr16(const WaveCall &call, OpFailure &failure);
bool amdBallot(const WaveCall &call, OpFailure &failure);
bool mbcnt(const LaneCall &call, OpFailure &failure);
bool mfma(const WaveCall &call, OpFailure &failure);
bool bufferLoad(const LaneCall &call, OpFailure &failure);
bool bufferLoadLds(const LaneCall &call, OpFailure &failure);
bool vmcntWait(const LaneCall &call, OpFailure &failure);
bool readFirstLane(const WaveCall &call, OpFailure &failure);
bool readLane(const WaveCall &call, OpFailure &failure);
/// The lanes have met; nothing else happens.
bool waveBarrier(const WaveCall &call, OpFailure &failure);

// NVIDIA (nvidia_ops.cpp).
bool shfl(const WaveCall &call, OpFailure &failure);
bool voteBallot(const WaveCall &call, OpFailure &failure);
bool mmaM16N8K16(const WaveCall &call, OpFailure &failure);
bool ldmatrix(const WaveCall &call, OpFailure &failure);

// cp.async (cp_async.cpp).
bool cpAsync(const LaneCall &call, OpFailure &failure);
bool cpAsyncCommit(const LaneCall &call, OpFailure &failure);
bool cpAsyncWait(const LaneCall &call, OpFailure &failure);

} // namespace tessel::runtime::emulator

#endif // TESSEL_RUNTIME_EMULATOR_OPS_H
