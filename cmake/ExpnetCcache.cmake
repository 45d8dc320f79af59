# ccache for every compile when available. PCH-friendly sloppiness is needed,
# or ccache refuses to cache translation units that use the LibTorch PCH.
find_program(EXPNET_CCACHE ccache)
if(EXPNET_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env
      "CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime"
      ${EXPNET_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
  message(STATUS "ccache: ${EXPNET_CCACHE}")
endif()
