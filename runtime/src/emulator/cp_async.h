//===- emulator/cp_async.h - One lane's asynchronous copies -----*- C++ -*-===//
//
// cp.async is per thread: each lane queues its copies in an open group,
// commit_group closes the group, and wait_group n completes every committed
// group but the newest n. The emulator copies nothing until a wait retires a
// group, so a kernel that reads its destination before waiting reads what
// was there before, as it may on the GPU, and the tests can tell.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_EMULATOR_CP_ASYNC_H
#define TESSEL_RUNTIME_EMULATOR_CP_ASYNC_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessel::runtime::emulator {

class CpAsyncQueue {
public:
  /// Forgets everything queued: a new block starts (copies a block never
  /// waited for would land in the old block's shared memory, which is gone).
  void clear();
  /// Queues a copy of `srcBytes` bytes followed by `bytes - srcBytes` zeros
  /// in the open group.
  void add(void *dst, const void *src, uint32_t bytes, uint32_t srcBytes);
  /// Queues the write of `bytes` (at most 16) bytes read already, `data`, as
  /// a group of its own (a load to LDS: each is one vmcnt unit).
  void addLoaded(void *dst, const void *data, uint32_t bytes);
  /// Closes the open group (empty or not: an empty group still counts).
  void commit();
  /// Performs, oldest first, the copies of the committed groups but the
  /// newest `keep`.
  void wait(uint32_t keep);

private:
  struct Copy {
    void *dst;
    /// Null where the data was read when queued (`loaded`).
    const void *src;
    uint32_t bytes, srcBytes;
    uint8_t loaded[16];
  };
  /// Oldest first; the first `done` have been performed.
  std::vector<Copy> copies;
  size_t done = 0;
  /// Per committed group, the index in `copies` where it ends; the first
  /// `retired` groups are complete.
  std::vector<size_t> groupEnds;
  size_t retired = 0;
};

} // namespace tessel::runtime::emulator

#endif // TESSEL_RUNTIME_EMULATOR_CP_ASYNC_H
