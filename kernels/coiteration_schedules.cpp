// The specialised coiteration schedules (see kernels/schedule.hpp).
#include "kernels/schedule.hpp"

namespace sj {

void add_coiteration_schedules(std::vector<const ScheduleImpl*>& out) {}

}  // namespace sj
