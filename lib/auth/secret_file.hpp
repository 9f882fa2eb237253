#pragma once
// A file that holds a secret (a MAC key, a password): read only when it is a regular file that
// neither group nor others may read or write, as ssh requires of private keys. Used by every
// option that takes a secret from a file, so each refuses the same files with the same words.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace linerate::auth {

// A secret file that cannot be used; what() is one line naming the file and what to do.
struct SecretFileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The content of `path` (at most `max_bytes`). Refuses a file that is missing, not a regular
// file (a symbolic link included), has a mode with any of 077 set ("chmod 600 FILE") or is
// larger than `max_bytes`. `what` names the file in the messages: "key file", or "file" where
// the option's name comes first ("--export-auth: file F is ..."). The caller wipes the content
// when done with it (OPENSSL_cleanse).
std::string read_secret_file(const std::string& path, std::string_view what,
                             size_t max_bytes = 4096);

// `text` without the white space (spaces, tabs, CR, LF) at either end.
std::string_view trim_space(std::string_view text);

}  // namespace linerate::auth
