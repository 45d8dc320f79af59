# Third-party packages, all from Debian 12 (packaging/install-deps.sh installs them).
# A CUDA build points CMAKE_PREFIX_PATH at an official LibTorch; nothing else changes.
find_package(Torch REQUIRED)
find_package(OpenCV REQUIRED COMPONENTS core imgproc imgcodecs)
find_package(SQLite3 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(Threads REQUIRED)
# Karpathy JSON for the dataset index: a streaming pass at gigabytes per second (docs/datasets.md).
find_package(simdjson REQUIRED)
# SHA-256 of checkpoints (the per-sample evaluation store's key): nettle's sha2.
find_package(PkgConfig REQUIRED)
pkg_check_modules(NETTLE REQUIRED IMPORTED_TARGET nettle)
# Alt text in the photos' own XMP metadata (core/src/metadata/alt_text.cpp, docs/metadata.md).
# Needed by the desktop build; a headless engine without it says so when asked to write.
find_package(exiv2 CONFIG QUIET)
if(EXPNET_BUILD_GUI AND NOT exiv2_FOUND)
  message(FATAL_ERROR "exiv2 was not found: install libexiv2-dev (packaging/install-deps.sh)")
endif()

# LibTorch's CMake config appends its own flags to CMAKE_CXX_FLAGS (e.g. the
# _GLIBCXX_USE_CXX11_ABI setting of an official build); keep them, they are
# what its ABI needs.

if(EXPNET_BUILD_GUI)
  find_package(Qt6 REQUIRED COMPONENTS Core Gui Widgets PrintSupport Test Concurrent Sql)
  find_package(QCustomPlotQt6 REQUIRED)
  set(CMAKE_AUTOMOC ON)
  set(CMAKE_AUTORCC ON)
endif()

# Debian's python3 with python3-torch: the PyTorch peer of the round-trip tests.
# Another python3 (pyenv, venv) may come first on PATH, so look in /usr/bin only.
find_program(EXPNET_TORCH_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(EXPNET_TORCH_PYTHON)
  execute_process(COMMAND ${EXPNET_TORCH_PYTHON} -c "import torch"
                  RESULT_VARIABLE _expnet_torch_py_rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT _expnet_torch_py_rc EQUAL 0)
    message(WARNING "${EXPNET_TORCH_PYTHON} cannot import torch: PyTorch peer tests will fail (apt-get install python3-torch)")
  endif()
endif()
