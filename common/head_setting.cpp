#include "common/head_setting.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/errors.h"

namespace sb {

HeadSetting::HeadSetting(std::vector<std::string> own_names) : own_(std::move(own_names)) {}

bool HeadSetting::is_own() const {
  return std::find(own_.begin(), own_.end(), text_) != own_.end();
}

HeadSetting& HeadSetting::operator=(const std::string& text) {
  text_ = text;
  spec_ = HeadSpec{};
  error_.clear();
  if (is_own()) return *this;
  std::string hint;
  for (const auto& name : own_) hint += (hint.empty() ? " (or " : ", ") + name;
  if (!hint.empty()) hint += ")";
  try {
    spec_ = parse_head_setting(text_, hint);
  } catch (const OptionError& e) {
    error_ = e.what();
  }
  return *this;
}

const HeadSpec& HeadSetting::spec() const {
  // internal: a trainer asks is_own() before it asks for the spec of its own head ("mse").
  if (is_own())
    throw std::logic_error("HeadSetting::spec: '" + text_ + "' is the trainer's own head");
  if (!error_.empty()) throw OptionError::described("head", error_);
  return spec_;
}

}  // namespace sb
