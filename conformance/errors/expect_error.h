// Shared by the error tests: run a callable, expect a loom::Error (or a
// subclass) whose message contains every given substring.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "loom/tensor.h"

namespace loom {

// Runs f (which realizes, so lazy errors surface too) and checks the error type and message.
template <typename E = Error>
inline void expect_error(const std::function<void()> &f, const std::vector<std::string> &substrings) {
  try {
    f();
    ADD_FAILURE() << "expected " << typeid(E).name() << ", nothing was thrown";
  } catch (const Error &e) {
    if constexpr (!std::is_same_v<E, Error>) {
      if (!dynamic_cast<const E *>(&e)) ADD_FAILURE() << "expected " << typeid(E).name() << ", got " << typeid(e).name();
    }
    const std::string msg = e.what();
    for (const std::string &s : substrings)
      EXPECT_NE(msg.find(s), std::string::npos) << "message lacks \"" << s << "\": " << msg;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected " << typeid(E).name() << ", got a non-loom exception: " << e.what();
  }
}

}  // namespace loom
