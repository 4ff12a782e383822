//===- core/status.h - Building tessel_status values ------------*- C++ -*-===//
//
// Internal helpers for the status objects of runtime.h. A status is a code
// and a message; NULL is success. Every message names the object and the
// values involved, so callers can act on it without a debugger.
//
//===----------------------------------------------------------------------===//
#ifndef TESSEL_RUNTIME_CORE_STATUS_H
#define TESSEL_RUNTIME_CORE_STATUS_H

#include "tessel/runtime.h"

#include <string>

struct tessel_status_t {
  tessel_status_code code;
  std::string message;
};

namespace tessel::runtime {

/// A new status with `code` (not TESSEL_OK) and `message`.
tessel_status makeStatus(tessel_status_code code, std::string message);

/// A new status with `code` and a printf-formatted message.
__attribute__((format(printf, 2, 3))) tessel_status
makeStatusf(tessel_status_code code, const char *fmt, ...);

/// Prepends "`context`: " to the message of a failed `status`, so an error
/// from deep inside says which object it concerns. Returns `status`.
tessel_status annotate(tessel_status status, const std::string &context);

/// The status for the exception being handled: "out of memory while `what`"
/// for std::bad_alloc, likewise for any other. Never throws: if even that
/// status cannot be allocated, returns a static one.
tessel_status statusFromException(const char *what) noexcept;

/// Runs `body`, a callable returning tessel_status, and turns anything it
/// throws into a status. Every C entry point that returns a tessel_status
/// goes through here: an exception that reached the C caller would terminate
/// it, and the runtime promises never to abort on bad input (a huge file, a
/// failed allocation).
template <typename Body>
tessel_status guard(const char *what, Body &&body) noexcept {
  try {
    return body();
  } catch (...) {
    return statusFromException(what);
  }
}

} // namespace tessel::runtime

#endif // TESSEL_RUNTIME_CORE_STATUS_H
