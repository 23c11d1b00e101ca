// `sparsejit cache list|verify|clear [--dir D]`: the persistent cache from the command line.
//   list    every entry: key, size, age (and problems, if any)
//   verify  checks every entry (header, checksum, name, build); exit 1 if any is bad
//   clear   removes every entry and leftover temporary file; the folder stays
// D defaults to the folder the library would use (cache/cache_folder.hpp). argv[0] is the
// program and argv[1] "cache", as in main(). Returns the exit status (2 = usage error).
#pragma once

int run_cache_command(int argc, char** argv);
