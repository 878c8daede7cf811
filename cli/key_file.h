// Reading a secret key from a file given on the command line (serve's and the hub's
// --api-key-file): its first line, without surrounding whitespace or a CR, so that a file saved
// by an editor or with `echo` gives the key the user meant.
#pragma once

#include <string>

#include "base/status.h"

namespace cellserve::cli {

// InvalidArgument "<flag> <path>: ..." when the file cannot be read, its first line is blank, or
// group or others have any access to it (an admin key others can read is no key: chmod 600).
// The bytes read are zeroed once the key is taken from them.
Result<std::string> read_key_file(const std::string& flag, const std::string& path);

}  // namespace cellserve::cli
