# sb_warnings: the warning set for our own code. Third-party headers are included as SYSTEM
# (imported targets are), so only our code has to be clean.
add_library(sb_warnings INTERFACE)
target_compile_options(sb_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wnull-dereference -Wdouble-promotion -Wformat=2
  -Wimplicit-fallthrough)
option(SB_WERROR "Treat warnings in our code as errors" OFF)
if(SB_WERROR)
  target_compile_options(sb_warnings INTERFACE -Werror)
endif()
