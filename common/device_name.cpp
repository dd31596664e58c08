#include "common/device_name.h"

namespace sb {

bool is_device_name(const std::string& name) {
  if (name == "auto" || name == "cpu" || name == "cuda") return true;
  const std::string prefix = "cuda:";
  return name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         name.find_first_not_of("0123456789", prefix.size()) == std::string::npos;
}

}  // namespace sb
