# lm_config: the word-level trainer's configuration (TOML files + command-line overrides).
# LibTorch-free, so its test builds in seconds. Included from trainers/lm/CMakeLists.txt.
add_library(lm_config STATIC ${CMAKE_CURRENT_LIST_DIR}/config.cpp)
target_include_directories(lm_config PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(lm_config PUBLIC head_spec tomlplusplus::tomlplusplus CLI11::CLI11
                      PRIVATE sb_warnings)
