//===- emulator/fiber.cpp - Fiber stacks and context switches -------------===//
//
// On x86-64 a switch is a dozen instructions of assembly (below): it pushes
// the registers the System V ABI makes callee-saved (rbx, rbp, r12-r15) and
// the control words the ABI also preserves across calls (MXCSR's rounding
// and exception masks, the x87 control word), stores the stack pointer in
// the suspended context and pops the same from the resumed one. Everything
// else is caller-saved, and the switch is an ordinary call, so the compiler
// has already saved what it needs. Other architectures use swapcontext.
//
// Under AddressSanitizer every switch is announced to it
// (__sanitizer_start/finish_switch_fiber), else it reports the foreign
// stacks as overflows.
//
//===----------------------------------------------------------------------===//

#include "fiber.h"

#include "../support/format.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TESSEL_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TESSEL_EMU_ASAN 1
#endif
#if defined(TESSEL_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

using namespace tessel::runtime::emulator;

std::unique_ptr<FiberStack> FiberStack::create(std::string &error) {
  const size_t guard = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void *mapping = ::mmap(nullptr, guard + kUsableBytes, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    error = tessel::format("mmap of a %zu-byte fiber stack: %s",
                           guard + kUsableBytes, std::strerror(errno));
    return nullptr;
  }
  if (::mprotect(mapping, guard, PROT_NONE) != 0) {
    error = tessel::format("mprotect of a fiber stack's guard page: %s",
                           std::strerror(errno));
    ::munmap(mapping, guard + kUsableBytes);
    return nullptr;
  }
  return std::unique_ptr<FiberStack>(
      new FiberStack(static_cast<char *>(mapping), guard));
}

FiberStack::~FiberStack() { ::munmap(mapping, guardBytes + kUsableBytes); }

bool FiberStackPool::take(size_t count,
                          std::vector<std::unique_ptr<FiberStack>> &out,
                          std::string &error) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    while (out.size() < count && !idle.empty()) {
      out.push_back(std::move(idle.back()));
      idle.pop_back();
    }
  }
  bool complete = true;
  size_t newStacks = 0;
  while (out.size() < count && complete) {
    std::unique_ptr<FiberStack> stack = FiberStack::create(error);
    complete = stack != nullptr;
    if (stack) {
      out.push_back(std::move(stack));
      ++newStacks;
    }
  }
  std::lock_guard<std::mutex> lock(mutex);
  made += newStacks;
  idle.reserve(made);
  return complete;
}

void FiberStackPool::give(std::vector<std::unique_ptr<FiberStack>> &stacks) {
  std::lock_guard<std::mutex> lock(mutex);
  for (std::unique_ptr<FiberStack> &stack : stacks)
    idle.push_back(std::move(stack));
  stacks.clear();
}

namespace {

#if defined(TESSEL_EMU_ASAN)
/// The context being left by the switch in progress on this thread: the one
/// to tell AddressSanitizer's answer about where its stack is.
thread_local FiberContext *switchingFrom = nullptr;

void beginSwitch(FiberContext &from, const FiberContext &to, bool leaving,
                 void **fakeStack) {
  switchingFrom = &from;
  __sanitizer_start_switch_fiber(leaving ? nullptr : fakeStack, to.stackBase,
                                 to.stackSize);
}

/// Learns the bounds of the thread's own stack the first time the
/// scheduler leaves it; fibers' bounds are known from their FiberStack.
void endSwitch(void *fakeStack) {
  const void *base = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fakeStack, &base, &size);
  if (!switchingFrom->stackBase) {
    switchingFrom->stackBase = base;
    switchingFrom->stackSize = size;
  }
}
#endif

/// Where every fiber starts: runs the function prepareFiber was given.
[[noreturn]] void startFiber(void *contextAddress) {
#if defined(TESSEL_EMU_ASAN)
  endSwitch(nullptr);
#endif
  auto *context = static_cast<FiberContext *>(contextAddress);
  context->run(context->argument);
  // prepareFiber's contract: `run` never returns.
  std::abort();
}

/// What both context switches' prepareFiber record before building the
/// fiber's first frame.
void recordFiber(FiberContext &fiber, FiberStack &stack,
                 void (*run)(void *argument), void *argument) {
  fiber.run = run;
  fiber.argument = argument;
  fiber.stackBase = stack.base();
  fiber.stackSize = stack.size();
#if defined(TESSEL_EMU_ASAN)
  // Frames of an earlier fiber that never returned left their poison.
  ASAN_UNPOISON_MEMORY_REGION(stack.base(), stack.size());
#endif
}

} // namespace

#if defined(__x86_64__)

extern "C" {
/// Saves the running context's registers on its stack and its stack
/// pointer in *saveTo, then resumes the context whose stack pointer is
/// `resume`.
void tessel_emu_switch(void **saveTo, void *resume);
/// The first code a new fiber runs, entered by tessel_emu_switch's `ret`
/// with the function in r12 and its argument in r13 (see prepareFiber).
void tessel_emu_fiber_entry();
}

// A suspended context's stack holds, from its stack pointer up: the control
// words (MXCSR, then the x87 control word, in one 8-byte slot), r15, r14,
// r13, r12, rbx, rbp and the return address; prepareFiber lays a new
// fiber's stack out the same way. The entry's .cfi_undefined rip ends
// debuggers' backtraces there instead of walking into garbage.
asm(R"(
  .text
  .p2align 4
  .globl tessel_emu_switch
  .hidden tessel_emu_switch
  .type tessel_emu_switch, @function
tessel_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tessel_emu_switch, .-tessel_emu_switch

  .p2align 4
  .globl tessel_emu_fiber_entry
  .hidden tessel_emu_fiber_entry
  .type tessel_emu_fiber_entry, @function
tessel_emu_fiber_entry:
  .cfi_startproc
  .cfi_undefined rip
  movq %r13, %rdi
  callq *%r12
  ud2
  .cfi_endproc
  .size tessel_emu_fiber_entry, .-tessel_emu_fiber_entry
)");

void tessel::runtime::emulator::prepareFiber(FiberContext &fiber,
                                             FiberStack &stack,
                                             void (*run)(void *argument),
                                             void *argument) {
  recordFiber(fiber, stack, run, argument);
  // What tessel_emu_switch pops, from the new stack pointer up: the control
  // words, r15, r14, r13, r12, rbx, rbp, the return address. The `ret`
  // leaves the stack pointer at top - 16, 16-byte aligned, so the entry's
  // call gives startFiber the alignment the ABI promises a function (8 mod
  // 16 after the return address).
  auto *top = reinterpret_cast<uint64_t *>(stack.base() + stack.size());
  uint64_t *sp = top - 10;
  uint32_t mxcsr = 0;
  uint16_t x87Control = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(x87Control));
  sp[0] = mxcsr | uint64_t(x87Control) << 32;
  sp[1] = 0;                                       // r15
  sp[2] = 0;                                       // r14
  sp[3] = reinterpret_cast<uint64_t>(&fiber);      // r13
  sp[4] = reinterpret_cast<uint64_t>(&startFiber); // r12
  sp[5] = 0;                                       // rbx
  sp[6] = 0;                                       // rbp: frame chain end
  sp[7] = reinterpret_cast<uint64_t>(&tessel_emu_fiber_entry);
  sp[8] = sp[9] = 0;
  fiber.stackPointer = sp;
}

namespace {
void switchStacks(FiberContext &from, FiberContext &to) {
  tessel_emu_switch(&from.stackPointer, to.stackPointer);
}
} // namespace

#else // !__x86_64__

namespace {

/// makecontext passes int arguments only: the context's address travels as
/// two halves.
void startFiberFromHalves(unsigned high, unsigned low) {
  startFiber(reinterpret_cast<void *>(
      static_cast<uintptr_t>(uint64_t(high) << 32 | low)));
}

} // namespace

void tessel::runtime::emulator::prepareFiber(FiberContext &fiber,
                                             FiberStack &stack,
                                             void (*run)(void *argument),
                                             void *argument) {
  recordFiber(fiber, stack, run, argument);
  ::getcontext(&fiber.context);
  fiber.context.uc_stack.ss_sp = stack.base();
  fiber.context.uc_stack.ss_size = stack.size();
  fiber.context.uc_link = nullptr;
  const auto address = reinterpret_cast<uintptr_t>(&fiber);
  ::makecontext(&fiber.context,
                reinterpret_cast<void (*)()>(&startFiberFromHalves), 2,
                static_cast<unsigned>(uint64_t(address) >> 32),
                static_cast<unsigned>(address));
}

namespace {
void switchStacks(FiberContext &from, FiberContext &to) {
  ::swapcontext(&from.context, &to.context);
}
} // namespace

#endif // __x86_64__

void tessel::runtime::emulator::switchFiber(FiberContext &from,
                                            FiberContext &to, bool leaving) {
#if defined(TESSEL_EMU_ASAN)
  void *fakeStack = nullptr;
  beginSwitch(from, to, leaving, &fakeStack);
#else
  (void)leaving;
#endif
  switchStacks(from, to);
#if defined(TESSEL_EMU_ASAN)
  endSwitch(fakeStack);
#endif
}
