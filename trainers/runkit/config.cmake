# runkit_config: the one configuration engine (key tables over config structs, TOML files,
# command-line overrides, ranges, trajectory keys). LibTorch-free, so its test and lm_config's
# build in seconds. Included from trainers/lm/config.cmake and trainers/runkit/CMakeLists.txt.
add_library(runkit_config STATIC ${CMAKE_CURRENT_LIST_DIR}/config_table.cpp)
target_include_directories(runkit_config PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(runkit_config PUBLIC common tomlplusplus::tomlplusplus CLI11::CLI11
                      PRIVATE sb_warnings)
