// `sparsejit einsum "EXPR" --tensor NAME=FILE[:FORMAT] ... [options]`: an index-notation
// expression on tensors from files (see the usage text in einsum_command.cpp). argv[0] is the
// program and argv[1] "einsum", as in main(). Returns the exit status (2 = usage error).
#pragma once

int run_einsum_command(int argc, char** argv);
extern const char* const kEinsumUsage;
