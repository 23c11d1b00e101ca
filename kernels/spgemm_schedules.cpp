// The specialised spgemm schedules (see kernels/schedule.hpp).
#include "kernels/schedule.hpp"

namespace sj {

void add_spgemm_schedules(std::vector<const ScheduleImpl*>& out) {}

}  // namespace sj
