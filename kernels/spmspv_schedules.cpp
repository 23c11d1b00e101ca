// The specialised spmspv schedules (see kernels/schedule.hpp).
#include "kernels/schedule.hpp"

namespace sj {

void add_spmspv_schedules(std::vector<const ScheduleImpl*>& out) {}

}  // namespace sj
