//===- host/host_backend.cpp - Run host kernels on the calling thread -----===//
//
// A host kernel's binary is an ELF shared object whose entry has the type
// `void entry(void **params)`. The object only exists in memory, so it is
// written to an anonymous memfd and dlopen'ed through /proc/self/fd; where
// that is impossible (no memfd_create, seccomp, no /proc) it goes through a
// temporary file in $TMPDIR. Either stays until the kernel is unloaded (see
// LoadedFile). Every failed attempt ends up in the error message.
//
// A kernel compiled for an x86-64 level this CPU lacks is refused before it
// is loaded (see x86_level.h): it would die of SIGILL mid-launch.
//
// Host launches are synchronous and ignore the grid and block: the host code
// generator emits the whole iteration space as loops in one call.
//
//===----------------------------------------------------------------------===//

#include "../core/backend.h"
#include "../core/status.h"
#include "../support/format.h"
#include "x86_level.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

using namespace tessel;
using namespace tessel::runtime;

namespace {

using EntryFn = void (*)(void **params);

/// Where a loaded object's bytes live. glibc's dlopen hands back an already
/// loaded library when the path matches one it has seen, so the path must
/// stay unique (the memfd open, the temporary file linked) until dlclose.
struct LoadedFile {
  int fd = -1;
  std::string path;
};

class HostKernel final : public LoadedKernel {
public:
  HostKernel(void *library, EntryFn entry, LoadedFile file)
      : library(library), entry(entry), file(std::move(file)) {}
  ~HostKernel() override {
    ::dlclose(library);
    if (file.fd >= 0)
      ::close(file.fd);
    if (!file.path.empty())
      ::unlink(file.path.c_str());
  }

  void *const library;
  const EntryFn entry;

private:
  LoadedFile file;
};

bool writeAll(int fd, bundle::ByteSpan bytes) {
  size_t done = 0;
  while (done < bytes.size) {
    ssize_t n = ::write(fd, bytes.data + done, bytes.size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// Why a load attempt failed, in the words of each step that failed.
struct Attempts {
  std::string log;
  /// dlopen ran and rejected the object: another route would not help.
  bool rejected = false;
};

/// dlopens `path`; on failure records dlerror().
void *openLibrary(const std::string &path, Attempts &attempts) {
  void *library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    attempts.rejected = true;
    const char *error = ::dlerror();
    attempts.log += format("dlopen(%s): %s; ", path.c_str(),
                           error ? error : "unknown error");
  }
  return library;
}

/// Loads `bytes` through an anonymous memfd, which stays open in `file`.
/// Returns null, with the reason in `attempts`, if it could not.
void *openThroughMemfd(bundle::ByteSpan bytes,
                       const std::string &name, Attempts &attempts,
                       LoadedFile &file) {
  // The memfd name shows up in /proc/<pid>/maps: make it say which kernel.
  std::string label = ("tessel:" + name).substr(0, 240);
  int fd = ::memfd_create(label.c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    attempts.log += format("memfd_create: %s; ", std::strerror(errno));
    return nullptr;
  }
  void *library = nullptr;
  std::string path = format("/proc/self/fd/%d", fd);
  if (!writeAll(fd, bytes))
    attempts.log += format("writing the memfd: %s; ", std::strerror(errno));
  else if (::access(path.c_str(), R_OK) != 0)
    attempts.log += format("%s: %s; ", path.c_str(), std::strerror(errno));
  else
    library = openLibrary(path, attempts);
  if (library)
    file.fd = fd;
  else
    ::close(fd);
  return library;
}

/// Loads `bytes` through a temporary file, which stays in `file` until the
/// kernel is unloaded.
void *openThroughTempFile(bundle::ByteSpan bytes,
                          Attempts &attempts, LoadedFile &file) {
  const char *dir = std::getenv("TMPDIR");
  std::string path =
      std::string(dir && *dir ? dir : "/tmp") + "/tessel-kernel-XXXXXX";
  int fd = ::mkstemp(&path[0]);
  if (fd < 0) {
    attempts.log +=
        format("mkstemp(%s): %s; ", path.c_str(), std::strerror(errno));
    return nullptr;
  }
  void *library = nullptr;
  if (!writeAll(fd, bytes))
    attempts.log +=
        format("writing %s: %s; ", path.c_str(), std::strerror(errno));
  else
    library = openLibrary(path, attempts);
  ::close(fd);
  if (library)
    file.path = path;
  else
    ::unlink(path.c_str());
  return library;
}

/// Refuses a kernel whose `x86_64_level` parameter names a level this CPU
/// does not implement. Kernels without the parameter load as before.
tessel_status checkX86Level(const bundle::Kernel &kernel) {
  for (const auto &param : kernel.params) {
    if (param.first != kX86LevelParam)
      continue;
    if (param.second < 1)
      return makeStatusf(TESSEL_CORRUPT_BUNDLE,
                         "%s is %lld; levels start at 1 (x86-64)",
                         kX86LevelParam, static_cast<long long>(param.second));
    if (param.second > kMaxX86Level)
      return makeStatusf(TESSEL_UNSUPPORTED,
                         "compiled for x86-64 level %lld, which this runtime "
                         "does not know (the highest is %d, x86-64-v%d)",
                         static_cast<long long>(param.second), kMaxX86Level,
                         kMaxX86Level);
#if defined(__x86_64__)
    // Elsewhere the object is not x86 code at all, and dlopen says so.
    int level = static_cast<int>(param.second);
    std::string missing = missingX86Features(level, cpuHasFeature);
    if (!missing.empty())
      return makeStatusf(TESSEL_UNSUPPORTED,
                         "compiled for x86-64-v%d, but this CPU lacks %s "
                         "(loading it would crash with SIGILL; compile it "
                         "for a lower x86-64 level)",
                         level, missing.c_str());
#endif
  }
  return nullptr;
}

class HostBackend final : public Backend {
public:
  const char *name() const override { return "host"; }
  const std::vector<std::string> &targets() const override { return targets_; }

  tessel_status loadKernel(const bundle::Kernel &kernel,
                           bundle::ByteSpan binary,
                           std::unique_ptr<LoadedKernel> &out) override {
    if (tessel_status status = checkX86Level(kernel))
      return status;
    Attempts attempts;
    // TESSEL_HOST_NO_MEMFD forces the temporary-file path: for sandboxes
    // that allow memfd_create but not exec mappings of it, and for tests.
    const char *noMemfd = std::getenv("TESSEL_HOST_NO_MEMFD");
    void *library = nullptr;
    LoadedFile file;
    if (!noMemfd || !*noMemfd || std::strcmp(noMemfd, "0") == 0)
      library = openThroughMemfd(binary, kernel.name, attempts, file);
    // Fall back only when the memfd route itself failed: if dlopen rejected
    // the object, a temporary file will not help.
    if (!library && !attempts.rejected)
      library = openThroughTempFile(binary, attempts, file);
    if (!library) {
      attempts.log.resize(attempts.log.size() - 2); // the trailing "; "
      return makeStatusf(TESSEL_UNAVAILABLE,
                         "cannot load the host shared object: %s",
                         attempts.log.c_str());
    }
    ::dlerror(); // clear any stale error before dlsym
    void *symbol = ::dlsym(library, kernel.entry.c_str());
    if (!symbol) {
      // Copy the text now: dlclose may free the buffer dlerror points into.
      const char *error = ::dlerror();
      tessel_status status = makeStatusf(
          TESSEL_CORRUPT_BUNDLE,
          "entry symbol '%s' not found in the host shared object: %s",
          kernel.entry.c_str(), error ? error : "the symbol is null");
      HostKernel unload(library, nullptr, std::move(file));
      return status;
    }
    out = std::make_unique<HostKernel>(
        library, reinterpret_cast<EntryFn>(symbol), std::move(file));
    return nullptr;
  }

  tessel_status launch(LoadedKernel &kernel, void **params,
                       const uint32_t * /*grid*/, const uint32_t * /*block*/,
                       uint32_t /*sharedBytes*/, void *stream) override {
    if (stream)
      return makeStatus(TESSEL_INVALID_ARGUMENT,
                        "the host backend has no streams; pass NULL");
    static_cast<HostKernel &>(kernel).entry(params);
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
