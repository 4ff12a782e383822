//===- host/host_object.cpp - Loading a kernel's host shared object -------===//
//
// The object only exists in memory, so it is written to an anonymous memfd
// and dlopen'ed through /proc/self/fd; where that is impossible (no
// memfd_create, seccomp, no /proc) it goes through a temporary file in
// $TMPDIR. Either stays until the kernel is unloaded: glibc's dlopen hands
// back an already loaded library when the path matches one it has seen, so
// the path must stay unique (the memfd open, the temporary file linked) until
// dlclose. Every failed attempt ends up in the error message.
//
// A kernel compiled for an x86-64 level this CPU lacks is refused before it
// is loaded (see x86_level.h): it would die of SIGILL mid-launch.
//
//===----------------------------------------------------------------------===//

#include "host_object.h"

#include "../support/format.h"
#include "x86_level.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace tessel;
using namespace tessel::runtime;

namespace {

/// Where a loaded object's bytes live: one of the two is set.
struct LoadedFile {
  int fd = -1;
  std::string path;
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
void *openThroughMemfd(bundle::ByteSpan bytes, const std::string &name,
                       Attempts &attempts, LoadedFile &file) {
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
void *openThroughTempFile(bundle::ByteSpan bytes, Attempts &attempts,
                          LoadedFile &file) {
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

} // namespace

HostObject::~HostObject() {
  ::dlclose(library);
  if (fd >= 0)
    ::close(fd);
  if (!path.empty())
    ::unlink(path.c_str());
}

tessel_status
tessel::runtime::loadHostObject(const bundle::Kernel &kernel,
                                bundle::ByteSpan binary,
                                std::unique_ptr<LoadedKernel> &out) {
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
    tessel_status status =
        makeStatusf(TESSEL_CORRUPT_BUNDLE,
                    "entry symbol '%s' not found in the host shared object: %s",
                    kernel.entry.c_str(), error ? error : "the symbol is null");
    HostObject unload(library, nullptr, file.fd, std::move(file.path));
    return status;
  }
  out = std::make_unique<HostObject>(library, symbol, file.fd,
                                     std::move(file.path));
  return nullptr;
}
