// The specialised ewise schedules (see kernels/schedule.hpp).
#include "kernels/schedule.hpp"

namespace sj {

void add_ewise_schedules(std::vector<const ScheduleImpl*>& out) {}

}  // namespace sj
