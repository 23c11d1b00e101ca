/* asmjit's debug output writes to `stderr`; our private copy of Debian's (non-PIC) asmjit
 * archive refers to this variable instead (see CMakeLists.txt), so that the archive can be
 * linked into the shared library. It travels with every link of the archive. */
#include <stdio.h>

__attribute__((visibility("hidden"))) FILE *sparsejit_asmjit_stderr;

__attribute__((constructor)) static void sparsejit_asmjit_stderr_init(void) {
  sparsejit_asmjit_stderr = stderr;
}
