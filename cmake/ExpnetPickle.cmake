# expnet_pickle: the pickle machine of the checkpoint area (restricted
# unpickler, pickler, their values). No LibTorch, so the EXPNET_SANITIZE build
# (ASan+UBSan) compiles it and its tests in seconds.
set(EXPNET_PICKLE_SOURCES
  ${PROJECT_SOURCE_DIR}/core/src/checkpoint/pickle_value.cpp
  ${PROJECT_SOURCE_DIR}/core/src/checkpoint/unpickler.cpp
  ${PROJECT_SOURCE_DIR}/core/src/checkpoint/pickler.cpp)
add_library(expnet_pickle STATIC ${EXPNET_PICKLE_SOURCES})
set_target_properties(expnet_pickle PROPERTIES AUTOMOC OFF)  # no Qt
target_include_directories(expnet_pickle PUBLIC ${PROJECT_SOURCE_DIR}/core/include)
