// Errors: user mistakes throw loom::Error (subclasses mirror the Python
// exception torch would raise); broken invariants throw InternalError.
#pragma once
#include <stdexcept>
#include <string>

namespace loom {

class Error : public std::runtime_error {  // torch: RuntimeError
 public:
  explicit Error(const std::string &msg) : std::runtime_error(msg) {}
};
class ValueError : public Error {  // torch: ValueError
 public:
  using Error::Error;
};
class TypeError : public Error {  // torch: TypeError
 public:
  using Error::Error;
};
class IndexError : public Error {  // torch: IndexError (dim out of range, index out of bounds)
 public:
  using Error::Error;
};
class InternalError : public std::logic_error {  // a bug in loom, not in the caller's code
 public:
  explicit InternalError(const std::string &msg) : std::logic_error(msg) {}
};

[[noreturn]] void internal_fail(const char *file, int line, const std::string &msg);

}  // namespace loom

#define LOOM_CHECK(cond, msg)                                                       \
  do {                                                                              \
    if (!(cond)) ::loom::internal_fail(__FILE__, __LINE__, std::string(#cond) + ": " + (msg)); \
  } while (0)
