// The errors a user's input can cause. Each message is one line that names
// the problem, ready to print after "topolab: "; the command exits with its
// bad-input status for any InputError and calls anything else internal.
#pragma once

#include <stdexcept>

namespace topolab {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration the user got wrong: a flag, -smp, -cpu, -m, the cost model.
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

// An image (or module) that cannot boot.
class ImageError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace topolab
