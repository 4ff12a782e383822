//===- emulator/fiber.h - Stackful coroutines for emulated lanes -*- C++
//-*-===//
//
// The emulator runs every work-item of a block as a fiber: its own stack,
// switched to and from by the scheduler on the launching thread. A lane
// that reaches a wave op or a barrier switches back to the scheduler, which
// resumes it once the other lanes have arrived. Switches happen a few times
// per lane per wave op, so they must be cheap: on x86-64 a switch saves the
// callee-saved registers and the floating-point control words and swaps
// stack pointers (fiber.cpp); elsewhere it falls back to <ucontext.h>, which
// also makes a system call per switch.
//
// Fibers never return: the function a fiber runs ends by switching away for
// the last time, and a fiber that is not resumed again is simply abandoned
// (its stack is reused for the next fiber; nothing on it is destroyed).
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_EMULATOR_FIBER_H
#define TESSEL_RUNTIME_EMULATOR_FIBER_H

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace tessel::runtime::emulator {

/// A fiber's stack: mmap'ed, reserving no memory until touched, with a guard
/// page below it so that an overflow faults instead of corrupting the next
/// stack.
class FiberStack {
public:
  /// Generous for generated kernels, whose locals are registers and small
  /// arrays; only the pages a kernel touches are ever backed by memory.
  static constexpr size_t kUsableBytes = 512 * 1024;

  /// A new stack, or null with the reason in `error`.
  static std::unique_ptr<FiberStack> create(std::string &error);
  ~FiberStack();
  FiberStack(const FiberStack &) = delete;
  FiberStack &operator=(const FiberStack &) = delete;

  /// The lowest usable address; the stack grows down from base + size.
  char *base() const { return mapping + guardBytes; }
  size_t size() const { return kUsableBytes; }

private:
  FiberStack(char *mapping, size_t guardBytes)
      : mapping(mapping), guardBytes(guardBytes) {}
  char *const mapping;
  const size_t guardBytes;
};

/// Stacks kept from one launch to the next: mapping (and unmapping) a
/// thousand stacks per launch would cost more than a small kernel runs.
/// Launches on several threads at once each take their own.
class FiberStackPool {
public:
  /// Moves `count` stacks into `out`, mapping those the pool lacks; false,
  /// with the reason in `error`, if it cannot.
  bool take(size_t count, std::vector<std::unique_ptr<FiberStack>> &out,
            std::string &error);
  /// Keeps `stacks` for later launches.
  void give(std::vector<std::unique_ptr<FiberStack>> &stacks);

private:
  std::mutex mutex;
  std::vector<std::unique_ptr<FiberStack>> idle;
  /// Every stack the pool has made; `idle` has room for all, so that give
  /// never allocates (it runs in destructors).
  size_t made = 0;
};

/// Where a suspended fiber (or the scheduler) resumes.
struct FiberContext {
#if defined(__x86_64__)
  /// The stack pointer, at the registers the switch saved.
  void *stackPointer = nullptr;
#else
  ucontext_t context;
#endif
  /// What a prepared fiber runs when it starts.
  void (*run)(void *argument) = nullptr;
  void *argument = nullptr;
  /// The stack this context runs on, for AddressSanitizer's bookkeeping;
  /// null for the scheduler's (the thread's own) stack until it is known.
  const void *stackBase = nullptr;
  size_t stackSize = 0;
};

/// Makes `fiber` start `run(argument)` on `stack` when it is first switched
/// to. `run` must never return. The fiber starts with the calling thread's
/// floating-point control state (rounding, denormal handling).
void prepareFiber(FiberContext &fiber, FiberStack &stack,
                  void (*run)(void *argument), void *argument);

/// Suspends the caller into `from` and resumes `to`. `leaving` says that
/// `from` will never be resumed, so that sanitizers can forget its stack.
void switchFiber(FiberContext &from, FiberContext &to, bool leaving = false);

} // namespace tessel::runtime::emulator

#endif // TESSEL_RUNTIME_EMULATOR_FIBER_H
