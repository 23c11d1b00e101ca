#include "kernels/schedule.hpp"

namespace sj {

const std::vector<const ScheduleImpl*>& all_schedules() {
  static const std::vector<const ScheduleImpl*> list = [] {
    std::vector<const ScheduleImpl*> v;
    add_reference_schedules(v);
    add_spgemm_schedules(v);
    add_spmspv_schedules(v);
    add_ewise_schedules(v);
    add_coiteration_schedules(v);
    return v;
  }();
  return list;
}

}  // namespace sj
