//===- emulator/scheduler.h - Running a grid lane by lane -------*- C++ -*-===//
//
// Blocks run one at a time, in order (x fastest), so runs are reproducible.
// Within a block every work-item is a fiber that runs the kernel's entry
// until it returns or calls an op that waits for other lanes: a wave op
// waits for every live lane of its wave, a barrier for every live lane of
// the block. The scheduler runs one wave's ready lanes in lane order until
// each waits or has returned; when the whole wave waits at one wave op, the
// op's semantics fill in every lane's results and the wave goes on; when it
// cannot, the next wave runs; once every live lane of the block waits at the
// barrier, all go on. A state where none of this can happen is a deadlock,
// and a wave whose lanes wait at different wave ops has diverged: both are
// errors that say where each lane waits.
//
// An error stops the launch: the failing lane switches back to the
// scheduler for good, the block's other fibers are never resumed (their
// stacks are reused), and the launch returns the error.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_EMULATOR_SCHEDULER_H
#define TESSEL_RUNTIME_EMULATOR_SCHEDULER_H

#include "chip.h"
#include "fiber.h"

#include "tessel/emulator_abi.h"
#include "tessel/runtime.h"

#include <cstdint>

namespace tessel::runtime::emulator {

/// The entry of an interpreted kernel, run once per work-item.
using EmulatedEntry = void (*)(void **params, tessel_emu_lane *lane);

/// Runs every block of `grid` of `block`-sized blocks with `sharedBytes` of
/// shared memory each. Null on success; otherwise the first error, naming
/// the block, the lane and the op (TESSEL_INTERNAL for what a correct
/// kernel never does, TESSEL_UNSUPPORTED for what the emulator cannot do).
/// The limits are the caller's to check.
tessel_status runGrid(const EmulatedChip &chip, EmulatedEntry entry,
                      void **params, const uint32_t grid[3],
                      const uint32_t block[3], uint32_t sharedBytes,
                      FiberStackPool &stacks);

/// Where each op a kernel calls through opTable() arrives, on the calling
/// lane's fiber.
void laneCallsOp(tessel_emu_lane *lane, uint32_t index, void *io);

} // namespace tessel::runtime::emulator

#endif // TESSEL_RUNTIME_EMULATOR_SCHEDULER_H
