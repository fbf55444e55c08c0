// SPDX-License-Identifier: Apache-2.0
// tests/support/scoped_env.hpp — set or unset an environment variable for one scope.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace vgpu_test {

/// Sets (or, with no value, unsets) name until the end of the scope, then restores it.
/// Not thread-safe (neither is setenv): use it before starting threads. On Windows an empty
/// value unsets the variable (_putenv_s has no empty variables).
class ScopedEnv {
 public:
  ScopedEnv(std::string name, std::optional<std::string> value) : name_(std::move(name)) {
    if (const char* old = std::getenv(name_.c_str())) old_ = old;
    put(value ? value->c_str() : nullptr);
  }
  ~ScopedEnv() { put(old_ ? old_->c_str() : nullptr); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  /// Sets name_ to value, or unsets it when value is null.
  void put(const char* value) const {
#if defined(_WIN32)
    ::_putenv_s(name_.c_str(), value != nullptr ? value : "");
#else
    if (value != nullptr)
      ::setenv(name_.c_str(), value, 1);
    else
      ::unsetenv(name_.c_str());
#endif
  }

  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace vgpu_test
