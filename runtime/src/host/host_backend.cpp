//===- host/host_backend.cpp - Run host kernels on the calling thread -----===//
//
// A host kernel's binary is an ELF shared object whose entry has the type
// `void entry(void **params)`; host_object.h loads it.
//
// Host launches are synchronous and ignore the grid and block: the host code
// generator emits the whole iteration space as loops in one call.
//
//===----------------------------------------------------------------------===//

#include "../core/backend.h"
#include "../core/status.h"
#include "host_object.h"

#include <algorithm>
#include <cstring>
#include <thread>

using namespace tessel;
using namespace tessel::runtime;

namespace {

using EntryFn = void (*)(void **params);

class HostBackend final : public Backend {
public:
  const char *name() const override { return "host"; }
  const std::vector<std::string> &targets() const override { return targets_; }

  tessel_status loadKernel(const bundle::Kernel &kernel,
                           bundle::ByteSpan binary,
                           std::unique_ptr<LoadedKernel> &out) override {
    return loadHostObject(kernel, binary, out);
  }

  tessel_status launch(LoadedKernel &kernel, void **params,
                       const uint32_t * /*grid*/, const uint32_t * /*block*/,
                       uint32_t /*sharedBytes*/, void *stream) override {
    if (stream)
      return makeStatus(TESSEL_INVALID_ARGUMENT,
                        "the host backend has no streams; pass NULL");
    reinterpret_cast<EntryFn>(static_cast<HostObject &>(kernel).entry)(params);
    return nullptr;
  }

  uint32_t computeUnits() const override {
    return std::max(1u, std::thread::hardware_concurrency());
  }

  tessel_status copyToDevice(void *dst, const void *src, size_t bytes,
                             void *stream) override {
    if (stream)
      return makeStatus(TESSEL_INVALID_ARGUMENT,
                        "the host backend has no streams; pass NULL");
    std::memcpy(dst, src, bytes);
    return nullptr;
  }

private:
  /// A member, not a function-local static: tessel_device_target returns
  /// it and must not allocate.
  const std::vector<std::string> targets_ = {"host"};
};

} // namespace

tessel_status
tessel::runtime::createHostBackend(int ordinal, std::unique_ptr<Backend> &out) {
  if (ordinal != 0)
    return makeStatusf(TESSEL_NOT_FOUND,
                       "the host backend has one device (ordinal 0); got "
                       "ordinal %d",
                       ordinal);
  out = std::make_unique<HostBackend>();
  return nullptr;
}
