//===- emulator/cp_async.cpp - cp.async, commit_group, wait_group ---------===//

#include "cp_async.h"

#include "ops.h"

#include <cstring>

using namespace tessel::runtime::emulator;

void CpAsyncQueue::clear() {
  copies.clear();
  groupEnds.clear();
  done = retired = 0;
}

void CpAsyncQueue::add(void *dst, const void *src, uint32_t bytes,
                       uint32_t srcBytes) {
  copies.push_back({dst, src, bytes, srcBytes, {}});
}

void CpAsyncQueue::addLoaded(void *dst, const void *data, uint32_t bytes) {
  Copy copy{dst, nullptr, bytes, bytes, {}};
  std::memcpy(copy.loaded, data, bytes);
  copies.push_back(copy);
  commit();
}

void CpAsyncQueue::commit() { groupEnds.push_back(copies.size()); }

void CpAsyncQueue::wait(uint32_t keep) {
  while (groupEnds.size() - retired > keep) {
    for (; done < groupEnds[retired]; ++done) {
      const Copy &copy = copies[done];
      std::memcpy(copy.dst, copy.src ? copy.src : copy.loaded, copy.srcBytes);
      std::memset(static_cast<char *>(copy.dst) + copy.srcBytes, 0,
                  copy.bytes - copy.srcBytes);
    }
    ++retired;
  }
  // Everything committed is done: drop it, so that a loop of copies and
  // waits keeps the queue as short as one stage.
  if (retired == groupEnds.size()) {
    copies.erase(copies.begin(), copies.begin() + done);
    groupEnds.clear();
    done = retired = 0;
  }
}

namespace tessel::runtime::emulator {

bool cpAsync(const LaneCall &call, OpFailure &failure) {
  const auto &io = *static_cast<const tessel_emu_cp_async_io *>(call.io);
  // The PTX ISA: cp-size is 4, 8 or 16 (.cg: 16 only), src-size at most
  // cp-size, both addresses aligned to cp-size.
  if (io.bytes != 4 && io.bytes != 8 && io.bytes != 16)
    return fail(failure, TESSEL_INTERNAL, -1,
                "copies %u bytes; cp-size must be 4, 8 or 16", io.bytes);
  if (io.src_bytes > io.bytes)
    return fail(failure, TESSEL_INTERNAL, -1,
                "src-size %u is larger than cp-size %u", io.src_bytes,
                io.bytes);
  if (!call.shared.contains(io.dst, io.bytes))
    return fail(failure, TESSEL_INTERNAL, -1,
                "destination %p + %u bytes is outside shared memory [%p, "
                "%p + %zu)",
                io.dst, io.bytes, static_cast<void *>(call.shared.base),
                static_cast<void *>(call.shared.base), call.shared.size);
  if (reinterpret_cast<uintptr_t>(io.dst) % io.bytes != 0 ||
      reinterpret_cast<uintptr_t>(io.src) % io.bytes != 0)
    return fail(failure, TESSEL_INTERNAL, -1,
                "destination %p or source %p is not aligned to cp-size %u",
                io.dst, io.src, io.bytes);
  call.copies.add(io.dst, io.src, io.bytes, io.src_bytes);
  return true;
}

bool cpAsyncCommit(const LaneCall &call, OpFailure &) {
  call.copies.commit();
  return true;
}

bool cpAsyncWait(const LaneCall &call, OpFailure &) {
  call.copies.wait(static_cast<const tessel_emu_u32_io *>(call.io)->a);
  return true;
}

} // namespace tessel::runtime::emulator
