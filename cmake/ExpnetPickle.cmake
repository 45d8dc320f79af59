# expnet_pickle: the LibTorch-free part of the checkpoint area (restricted
# unpickler, pickler, their values, and the zip entry check that runs before
# LibTorch opens an archive). No LibTorch, so the EXPNET_SANITIZE build
# (ASan+UBSan) and the fuzzers compile it and its tests in seconds.
set(EXPNET_PICKLE_SOURCES
  ${PROJECT_SOURCE_DIR}/core/src/checkpoint/pickle_value.cpp
  ${PROJECT_SOURCE_DIR}/core/src/checkpoint/unpickler.cpp
  ${PROJECT_SOURCE_DIR}/core/src/checkpoint/pickler.cpp
  ${PROJECT_SOURCE_DIR}/core/src/checkpoint/zip_entries.cpp)
# minizip (Debian's libminizip-dev) reads zip central directories; zlib proves
# deflated sizes. Found here, not in ExpnetDependencies: the sanitizer build
# includes only this file.
find_package(PkgConfig REQUIRED)
pkg_check_modules(MINIZIP REQUIRED IMPORTED_TARGET GLOBAL minizip)
find_package(ZLIB REQUIRED GLOBAL)  # GLOBAL: the tests write zips with them
add_library(expnet_pickle STATIC ${EXPNET_PICKLE_SOURCES})
set_target_properties(expnet_pickle PROPERTIES AUTOMOC OFF)  # no Qt
target_include_directories(expnet_pickle PUBLIC ${PROJECT_SOURCE_DIR}/core/include)
target_link_libraries(expnet_pickle PRIVATE PkgConfig::MINIZIP ZLIB::ZLIB)
