# lm_config: the word-level trainer's configuration (TOML files + command-line overrides).
# LibTorch-free, so its test builds in seconds. Included from trainers/lm/CMakeLists.txt.
add_library(lm_config STATIC ${CMAKE_CURRENT_LIST_DIR}/config.cpp)
target_include_directories(lm_config PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(lm_config PUBLIC common tomlplusplus::tomlplusplus CLI11::CLI11
                      PRIVATE sb_warnings)
