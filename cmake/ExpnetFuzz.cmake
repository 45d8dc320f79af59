# The EXPNET_FUZZ build (packaging/fuzz.sh, docs/reliability.md): libFuzzer
# harnesses (tests/fuzz/fuzz_<target>.cpp) of the parsers that read user files,
# with ASan+UBSan. No LibTorch and no Qt, so a fresh build takes about a minute.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "EXPNET_FUZZ needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: configure with "
                      "-DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14, or run packaging/fuzz.sh")
endif()
# Every library gets the coverage instrumentation; only the harnesses link libFuzzer's main.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
add_link_options(-fsanitize=address,undefined)

find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
find_package(nlohmann_json 3 REQUIRED)
find_package(simdjson REQUIRED)
include(ExpnetPickle)

set(EXPNET_FUZZ_SRC ${PROJECT_SOURCE_DIR}/core/src)
# The text readers: vocabulary (JSON or pickle), datasets (Karpathy, COCO, CSV,
# JSONL, the streaming Karpathy reader) and the metrics tokenizer; load_dataset's
# folder of photos comes with them (not fuzzed: alt_text.cpp without exiv2 reads nothing).
set(EXPNET_FUZZ_TEXT_SOURCES
  text/vocabulary.cpp text/caption_text.cpp checkpoint/vocabulary_file.cpp system/atomic_file.cpp
  system/input_file.cpp data/dataset.cpp data/dataset_formats.cpp data/karpathy_stream.cpp metrics/eval_tokenizer.cpp
  data/photo_folder.cpp image/image_inputs.cpp metadata/alt_text.cpp metadata/metadata_limits.cpp)
list(TRANSFORM EXPNET_FUZZ_TEXT_SOURCES PREPEND ${EXPNET_FUZZ_SRC}/)
add_library(expnet_fuzz_text STATIC ${EXPNET_FUZZ_TEXT_SOURCES})
target_include_directories(expnet_fuzz_text PUBLIC ${PROJECT_SOURCE_DIR}/core/include ${EXPNET_FUZZ_SRC})
target_link_libraries(expnet_fuzz_text PUBLIC expnet_pickle nlohmann_json::nlohmann_json opencv_core
                      PRIVATE simdjson::simdjson ZLIB::ZLIB)
# As in core/CMakeLists.txt: the streaming reader is built with simdjson's threads on.
set_source_files_properties(${EXPNET_FUZZ_SRC}/data/karpathy_stream.cpp PROPERTIES COMPILE_DEFINITIONS SIMDJSON_THREADS_ENABLED=1)

# image_probe.cpp: the header checks split out of image_decode.cpp (when present).
file(GLOB EXPNET_FUZZ_IMAGE_SOURCES ${EXPNET_FUZZ_SRC}/image/image_decode.cpp ${EXPNET_FUZZ_SRC}/image/image_probe.cpp)
add_library(expnet_fuzz_image STATIC ${EXPNET_FUZZ_IMAGE_SOURCES})
target_include_directories(expnet_fuzz_image PUBLIC ${PROJECT_SOURCE_DIR}/core/include)
target_link_libraries(expnet_fuzz_image PUBLIC opencv_core opencv_imgproc opencv_imgcodecs)

# expnet_add_fuzzer(TARGET LIBRARY): tests/fuzz/fuzz_TARGET.cpp -> fuzz_TARGET.
set(EXPNET_FUZZ_TARGETS "")
function(expnet_add_fuzzer target library)
  add_executable(fuzz_${target} ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_${target}.cpp)
  target_link_libraries(fuzz_${target} PRIVATE ${library})
  target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer)
  set(EXPNET_FUZZ_TARGETS ${EXPNET_FUZZ_TARGETS} ${target} PARENT_SCOPE)
endfunction()

expnet_add_fuzzer(unpickler expnet_pickle)
expnet_add_fuzzer(vocabulary expnet_fuzz_text)
expnet_add_fuzzer(image_decode expnet_fuzz_image)
expnet_add_fuzzer(dataset_json expnet_fuzz_text)
expnet_add_fuzzer(dataset_csv expnet_fuzz_text)
expnet_add_fuzzer(dataset_jsonl expnet_fuzz_text)
expnet_add_fuzzer(karpathy_stream expnet_fuzz_text)
expnet_add_fuzzer(eval_tokenizer expnet_fuzz_text)
# The .pth (zip) entry checker: part of expnet_pickle (cmake/ExpnetPickle.cmake).
if(EXISTS ${EXPNET_FUZZ_SRC}/checkpoint/zip_entries.cpp)
  expnet_add_fuzzer(zip_entries expnet_pickle)
endif()
# packaging/fuzz.sh reads this list ("all").
file(WRITE ${PROJECT_BINARY_DIR}/fuzz_targets.txt "${EXPNET_FUZZ_TARGETS}\n")
