#include "jit/coiter_emitter.hpp"
#include "src/error.hpp"
namespace sj::jit::detail {
void emit_coiter_avx2(x86::Assembler&, const CoiterSpec&) { fail(SJ_ERR_UNSUPPORTED, "avx2 emitter: not yet"); }
}
