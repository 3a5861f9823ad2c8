// The user's input was wrong: a lab or case that does not exist, a file that cannot be read, a
// class folder with no submissions. `grade` exits 2 with the message, which names the input,
// never "the kit failed". A std::invalid_argument, so that a caller may catch either.
#pragma once

#include <stdexcept>

namespace grade {

struct BadInput : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

}  // namespace grade
