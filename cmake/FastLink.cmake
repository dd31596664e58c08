# Linking with LLVM's lld where the compiler accepts it: a LibTorch test program links in ~4 s
# instead of GNU ld's ~7 s (measured on 2 cores), and the build links ~60 of them. `make deps`
# installs lld (Makefile DEBIAN_PACKAGES); without it the default linker is used.
include(CheckLinkerFlag)
option(SB_USE_LLD "Link with lld when the compiler accepts -fuse-ld=lld" ON)
if(SB_USE_LLD)
  check_linker_flag(CXX "-fuse-ld=lld" SB_HAVE_LLD)
  if(SB_HAVE_LLD)
    add_link_options(-fuse-ld=lld)
  endif()
endif()
