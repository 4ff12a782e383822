//===- emulator/scheduler.cpp - Running a grid lane by lane ---------------===//

#include "scheduler.h"

#include "cp_async.h"
#include "ops.h"

#include "../core/status.h"
#include "../support/format.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace tessel::runtime::emulator {

namespace {

/// The widest wave there is (AMD's).
constexpr uint32_t kMaxWaveSize = 64;
/// What shared memory holds before a block writes it: all-ones bytes, a NaN
/// as f32, bf16 and f16, so that reading unwritten memory shows.
constexpr int kSharedPoison = 0xff;

enum class LaneState : uint8_t {
  Ready,     ///< runs when its wave's turn comes
  AtWaveOp,  ///< waits for its wave at op `Lane::op`
  AtBarrier, ///< waits for its block
  Returned,  ///< the entry returned
  Failed,    ///< stopped by an error; never resumed
};

struct Lane {
  tessel_emu_lane abi = {};
  FiberContext context;
  /// Its wave's index in the block.
  uint32_t wave = 0;
  LaneState state = LaneState::Ready;
  uint32_t op = 0;
  void *io = nullptr;
  CpAsyncQueue copies;
};

struct Wave {
  uint32_t index = 0;
  /// The block-linear index of its lane 0, and how many lanes exist (the
  /// last wave of a block may be partial).
  uint32_t first = 0, size = 0;
  uint32_t live = 0, atWaveOp = 0;
};

class BlockScheduler {
public:
  BlockScheduler(const EmulatedChip &chip, EmulatedEntry entry, void **params,
                 const uint32_t grid[3], const uint32_t block[3],
                 uint32_t sharedBytes,
                 std::vector<std::unique_ptr<FiberStack>> &stacks);

  /// Runs block (x, y, z) to its end; false if it failed, with the error in
  /// failureCode and failureMessage or pendingException.
  bool runBlock(uint32_t x, uint32_t y, uint32_t z);

  /// An op call from `abi`'s fiber.
  void call(tessel_emu_lane &abi, uint32_t index, void *io);

  tessel_status_code failureCode = TESSEL_OK;
  std::string failureMessage;
  /// An exception thrown on a fiber (out of memory), which cannot unwind
  /// through the kernel's frames: the launch rethrows it.
  std::exception_ptr pendingException;

private:
  static void runLane(void *lane);
  bool dispatch(Lane &lane, uint32_t index, void *io);
  [[noreturn]] void abandon(Lane &lane);
  bool runWave(Wave &wave);
  bool completeWaveOp(Wave &wave);
  void releaseBarrier();
  void fail(tessel_status_code code, std::string message);

  Lane &laneOf(const tessel_emu_lane &abi) {
    const uint32_t *id = abi.thread_id, *dim = abi.block_dim;
    return lanes[id[0] + dim[0] * (id[1] + dim[1] * id[2])];
  }
  uint32_t indexOf(const Lane &lane) const {
    return static_cast<uint32_t>(&lane - lanes.data());
  }
  Wave &waveOf(const Lane &lane) { return waves[lane.wave]; }
  std::string whereBlock() const;
  std::string where(const Lane &lane) const;
  std::string describe(const Wave &wave) const;
  std::string deadlockMessage() const;

  const EmulatedChip &chip;
  const EmulatedEntry entry;
  void **const params;
  std::vector<std::unique_ptr<FiberStack>> &stacks;
  std::vector<char> sharedStorage;
  SharedMemory shared;
  std::vector<Lane> lanes;
  std::vector<Wave> waves;
  uint32_t blockId[3] = {};
  uint32_t liveLanes = 0, lanesAtBarrier = 0;
  FiberContext schedulerContext;
};

BlockScheduler::BlockScheduler(const EmulatedChip &chip, EmulatedEntry entry,
                               void **params, const uint32_t grid[3],
                               const uint32_t block[3], uint32_t sharedBytes,
                               std::vector<std::unique_ptr<FiberStack>> &stacks)
    : chip(chip), entry(entry), params(params), stacks(stacks),
      sharedStorage(size_t(sharedBytes) + 15),
      lanes(size_t(block[0]) * block[1] * block[2]) {
  const auto storage = reinterpret_cast<uintptr_t>(sharedStorage.data());
  shared.base = sharedStorage.data() + ((16 - storage % 16) % 16);
  shared.size = sharedBytes;
  const uint32_t threads = static_cast<uint32_t>(lanes.size());
  for (uint32_t i = 0; i < threads; ++i) {
    tessel_emu_lane &abi = lanes[i].abi;
    abi.ops = opTable();
    abi.shared = shared.base;
    abi.thread_id[0] = i % block[0];
    abi.thread_id[1] = i / block[0] % block[1];
    abi.thread_id[2] = i / (block[0] * block[1]);
    for (int axis = 0; axis < 3; ++axis) {
      abi.block_dim[axis] = block[axis];
      abi.grid_dim[axis] = grid[axis];
    }
    abi.lane_id = i % chip.waveSize;
    lanes[i].wave = i / chip.waveSize;
    abi.wave_size = chip.waveSize;
    abi.scheduler = this;
  }
  for (uint32_t first = 0; first < threads; first += chip.waveSize) {
    Wave wave;
    wave.index = static_cast<uint32_t>(waves.size());
    wave.first = first;
    wave.size = std::min(chip.waveSize, threads - first);
    waves.push_back(wave);
  }
}

bool BlockScheduler::runBlock(uint32_t x, uint32_t y, uint32_t z) {
  blockId[0] = x, blockId[1] = y, blockId[2] = z;
  std::memset(shared.base, kSharedPoison, shared.size);
  for (size_t i = 0; i < lanes.size(); ++i) {
    Lane &lane = lanes[i];
    std::memcpy(lane.abi.block_id, blockId, sizeof blockId);
    lane.state = LaneState::Ready;
    lane.copies.clear();
    prepareFiber(lane.context, *stacks[i], runLane, &lane);
  }
  for (Wave &wave : waves) {
    wave.live = wave.size;
    wave.atWaveOp = 0;
  }
  liveLanes = static_cast<uint32_t>(lanes.size());
  lanesAtBarrier = 0;
  for (;;) {
    for (Wave &wave : waves)
      if (!runWave(wave))
        return false;
    // Every live lane now waits: at the barrier, or at a wave op of a wave
    // that has lanes at the barrier.
    if (liveLanes == 0)
      return true;
    if (lanesAtBarrier < liveLanes) {
      fail(TESSEL_INTERNAL, deadlockMessage());
      return false;
    }
    releaseBarrier();
  }
}

bool BlockScheduler::runWave(Wave &wave) {
  for (;;) {
    for (uint32_t i = wave.first; i < wave.first + wave.size; ++i) {
      Lane &lane = lanes[i];
      if (lane.state != LaneState::Ready)
        continue;
      switchFiber(schedulerContext, lane.context);
      if (lane.state == LaneState::Failed)
        return false;
    }
    // Lanes at the barrier hold the others at their wave op until the
    // block's deadlock check.
    if (wave.atWaveOp == 0 || wave.atWaveOp < wave.live)
      return true;
    if (!completeWaveOp(wave))
      return false;
  }
}

bool BlockScheduler::completeWaveOp(Wave &wave) {
  void *io[kMaxWaveSize] = {};
  uint32_t firstOp = UINT32_MAX;
  for (uint32_t i = 0; i < wave.size; ++i) {
    const Lane &lane = lanes[wave.first + i];
    if (lane.state != LaneState::AtWaveOp)
      continue;
    if (firstOp == UINT32_MAX)
      firstOp = lane.op;
    if (lane.op != firstOp) {
      fail(TESSEL_INTERNAL,
           format("%s, wave %u: divergence: %s (every live lane of a wave must "
                  "reach the same wave op)",
                  whereBlock().c_str(), wave.index, describe(wave).c_str()));
      return false;
    }
    io[i] = lane.io;
  }
  const OpInfo &info = *findOp(firstOp);
  OpFailure failure;
  if (!info.wave(WaveCall{firstOp, io, chip, shared}, failure)) {
    const bool laneExists =
        failure.lane >= 0 && uint32_t(failure.lane) < wave.size;
    std::string at =
        laneExists ? where(lanes[wave.first + uint32_t(failure.lane)])
                   : format("%s, wave %u", whereBlock().c_str(), wave.index);
    fail(failure.code, at + ": " + info.name + ": " + failure.message);
    return false;
  }
  for (uint32_t i = wave.first; i < wave.first + wave.size; ++i)
    if (lanes[i].state == LaneState::AtWaveOp)
      lanes[i].state = LaneState::Ready;
  wave.atWaveOp = 0;
  return true;
}

void BlockScheduler::releaseBarrier() {
  for (Lane &lane : lanes)
    if (lane.state == LaneState::AtBarrier)
      lane.state = LaneState::Ready;
  lanesAtBarrier = 0;
}

void BlockScheduler::runLane(void *argument) {
  Lane &lane = *static_cast<Lane *>(argument);
  auto &self = *static_cast<BlockScheduler *>(lane.abi.scheduler);
  self.entry(self.params, &lane.abi);
  lane.state = LaneState::Returned;
  --self.waveOf(lane).live;
  --self.liveLanes;
  switchFiber(lane.context, self.schedulerContext, /*leaving=*/true);
  std::abort(); // a returned lane is never resumed
}

void BlockScheduler::call(tessel_emu_lane &abi, uint32_t index, void *io) {
  Lane &lane = laneOf(abi);
  // The fiber may leave for good only with nothing of its own left to
  // destroy and no exception being handled (that state is per thread, not
  // per fiber): hence the catch records and the switch comes after it.
  try {
    if (dispatch(lane, index, io))
      return;
  } catch (...) {
    pendingException = std::current_exception();
  }
  abandon(lane);
}

bool BlockScheduler::dispatch(Lane &lane, uint32_t index, void *io) {
  const OpInfo *op = findOp(index);
  if (!op) {
    fail(TESSEL_INTERNAL,
         format("%s: unknown op index %u (emulator ABI %d has ops 0 to %d)",
                where(lane).c_str(), index, TESSEL_EMU_ABI_VERSION,
                TESSEL_EMU_OP_COUNT - 1));
    return false;
  }
  if (!isAvailable(*op, chip)) {
    fail(TESSEL_INTERNAL,
         format("%s: %s: not an op of %s (was the kernel built for another "
                "chip?)",
                where(lane).c_str(), op->name, chip.description));
    return false;
  }
  if (!io && op->takesRecord) {
    fail(TESSEL_INTERNAL, format("%s: %s: the op's record is null",
                                 where(lane).c_str(), op->name));
    return false;
  }
  switch (op->kind) {
  case OpKind::Lane: {
    OpFailure failure;
    if (op->lane(LaneCall{index, lane.abi, io, lane.copies, shared}, failure))
      return true;
    fail(failure.code, where(lane) + ": " + op->name + ": " + failure.message);
    return false;
  }
  case OpKind::Barrier:
    lane.state = LaneState::AtBarrier;
    ++lanesAtBarrier;
    break;
  case OpKind::Wave:
    lane.state = LaneState::AtWaveOp;
    lane.op = index;
    lane.io = io;
    ++waveOf(lane).atWaveOp;
    break;
  }
  switchFiber(lane.context, schedulerContext);
  return true;
}

void BlockScheduler::abandon(Lane &lane) {
  lane.state = LaneState::Failed;
  switchFiber(lane.context, schedulerContext, /*leaving=*/true);
  std::abort(); // a failed lane is never resumed
}

void BlockScheduler::fail(tessel_status_code code, std::string message) {
  failureCode = code;
  failureMessage = std::move(message);
}

std::string BlockScheduler::whereBlock() const {
  return format("block (%u, %u, %u)", blockId[0], blockId[1], blockId[2]);
}

std::string BlockScheduler::where(const Lane &lane) const {
  const uint32_t index = indexOf(lane);
  const uint32_t *id = lane.abi.thread_id;
  return format("%s, thread (%u, %u, %u) (wave %u, lane %u)",
                whereBlock().c_str(), id[0], id[1], id[2],
                index / chip.waveSize, index % chip.waveSize);
}

/// Where `lane` is, for messages: "at ds_bpermute", "returned".
std::string placeOf(const Lane &lane) {
  switch (lane.state) {
  case LaneState::AtWaveOp:
    return std::string("at ") + findOp(lane.op)->name;
  case LaneState::AtBarrier:
    return "at barrier";
  case LaneState::Returned:
    return "returned";
  case LaneState::Ready:
    return "ready";
  case LaneState::Failed:
    break;
  }
  return "failed";
}

std::string BlockScheduler::describe(const Wave &wave) const {
  // Runs of consecutive lanes in the same place: "lanes 0-31 at
  // ds_bpermute, lanes 32-63 at barrier".
  std::string out;
  uint32_t begin = 0;
  std::string place = placeOf(lanes[wave.first]);
  for (uint32_t i = 1; i <= wave.size; ++i) {
    std::string next = i < wave.size ? placeOf(lanes[wave.first + i]) : "";
    if (next == place)
      continue;
    if (!out.empty())
      out += ", ";
    out += i - begin == 1 ? format("lane %u ", begin)
                          : format("lanes %u-%u ", begin, i - 1);
    out += place;
    begin = i;
    place = std::move(next);
  }
  return out;
}

std::string BlockScheduler::deadlockMessage() const {
  std::string waits;
  for (const Wave &wave : waves) {
    if (wave.atWaveOp == 0)
      continue;
    if (!waits.empty())
      waits += "; ";
    waits += format("wave %u: %s", wave.index, describe(wave).c_str());
  }
  return format("%s: deadlock: %s (a wave op waits for every live lane of "
                "its wave, a barrier for every live lane of the block)",
                whereBlock().c_str(), waits.c_str());
}

/// Gives a launch's stacks back to the pool however the launch ends.
struct StacksOnLoan {
  FiberStackPool &pool;
  std::vector<std::unique_ptr<FiberStack>> stacks;
  ~StacksOnLoan() { pool.give(stacks); }
};

} // namespace

tessel_status runGrid(const EmulatedChip &chip, EmulatedEntry entry,
                      void **params, const uint32_t grid[3],
                      const uint32_t block[3], uint32_t sharedBytes,
                      FiberStackPool &stacks) {
  StacksOnLoan loan{stacks, {}};
  std::string error;
  if (!stacks.take(size_t(block[0]) * block[1] * block[2], loan.stacks, error))
    return makeStatusf(TESSEL_UNAVAILABLE, "%s: cannot map fiber stacks: %s",
                       chip.name, error.c_str());
  BlockScheduler scheduler(chip, entry, params, grid, block, sharedBytes,
                           loan.stacks);
  for (uint32_t z = 0; z < grid[2]; ++z)
    for (uint32_t y = 0; y < grid[1]; ++y)
      for (uint32_t x = 0; x < grid[0]; ++x) {
        if (scheduler.runBlock(x, y, z))
          continue;
        if (scheduler.pendingException)
          std::rethrow_exception(scheduler.pendingException);
        return makeStatus(scheduler.failureCode, std::string(chip.name) + ": " +
                                                     scheduler.failureMessage);
      }
  return nullptr;
}

void laneCallsOp(tessel_emu_lane *lane, uint32_t index, void *io) {
  static_cast<BlockScheduler *>(lane->scheduler)->call(*lane, index, io);
}

} // namespace tessel::runtime::emulator
