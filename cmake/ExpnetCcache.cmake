# ccache for every compile when available. PCH-friendly sloppiness is needed,
# or ccache refuses to cache translation units that use the LibTorch PCH.
# CCACHE_BASEDIR = the source tree makes paths relative, so another clone
# (a CI checkout, a worktree) reuses the cache.
find_program(EXPNET_CCACHE ccache)
if(EXPNET_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}"
      ${EXPNET_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
  message(STATUS "ccache: ${EXPNET_CCACHE}")
endif()
