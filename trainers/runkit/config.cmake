# runkit_config: the one configuration engine (key tables over config structs, TOML files,
# command-line overrides, ranges, trajectory keys) and the trainer descriptor printed by
# --describe (trainer_descriptor.h). LibTorch-free, so its test and lm_config's
# build in seconds. Included from trainers/lm/config.cmake and trainers/runkit/CMakeLists.txt.
add_library(runkit_config STATIC
  ${CMAKE_CURRENT_LIST_DIR}/config_table.cpp
  ${CMAKE_CURRENT_LIST_DIR}/trainer_descriptor.cpp
  ${CMAKE_CURRENT_LIST_DIR}/trainer_rules.cpp)
target_include_directories(runkit_config PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(runkit_config PUBLIC common tomlplusplus::tomlplusplus CLI11::CLI11
                      nlohmann_json::nlohmann_json PRIVATE sb_warnings)
