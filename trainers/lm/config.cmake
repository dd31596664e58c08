# lm_config: the word-level trainer's and dyneval's configuration (key tables over runkit's
# engine). LibTorch-free, so its test builds in seconds. Included from trainers/lm/CMakeLists.txt.
if(NOT TARGET runkit_config)
  include(${CMAKE_CURRENT_LIST_DIR}/../runkit/config.cmake)
endif()
add_library(lm_config STATIC ${CMAKE_CURRENT_LIST_DIR}/config.cpp
                             ${CMAKE_CURRENT_LIST_DIR}/dyneval_config.cpp)
target_include_directories(lm_config PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(lm_config PUBLIC runkit_config common PRIVATE sb_warnings)
